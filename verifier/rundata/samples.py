"""A file of sample records the tool varies (issue 46): ``SAMPLES = "orders.jsonl"`` in a
pipeline file instead of ``make_record``.

The file (UTF-8, JSON lines; blank lines ignored) holds one record per line, as
``make_record`` would return it: a JSON object with ``value`` and any of ``key``,
``headers`` (an object of name -> string), ``timestamp`` (milliseconds since the epoch)
and nothing else is an envelope; any other JSON object or array is the value itself (a
JSON string: its text is the value).

Record *i* of a topic is sample ``i mod n`` (``n`` samples), varied so that the same *i*
always gives the same record and the records differ where the file says
(docs/pipelines.md, "A file of sample records"):

- each field ``VARY`` names (a top-level field of the value, a JSON object) becomes *i*
  when the sample holds an integer there, and gets ``-<i>`` appended when it holds a
  string: distinct for every *i*, whatever the samples hold;
- a sample's ``timestamp`` moves by ``r`` times the samples' time span (latest minus
  earliest, plus 1 ms), ``r = i div n``: the file replayed as consecutive copies of its
  time, so event time keeps advancing.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from verifier.rundata.record_encoding import PipelineFileError, encode_record, is_envelope


class SampleRecords:
    """``make_record(topic, i)`` of a samples file: ``SAMPLES`` as a path, or a dict of
    topic -> path, each relative to the pipeline file's folder."""

    def __init__(self, samples: dict[str, list], vary: tuple[str, ...]) -> None:
        self.samples, self.vary = samples, vary
        self.spans = {t: _span(s) for t, s in samples.items()}

    def __call__(self, topic: str, i: int):
        rows = self.samples[topic]
        n = len(rows)
        sample, r = rows[i % n], i // n
        envelope = is_envelope(sample)
        value = sample["value"] if envelope else sample
        if self.vary:
            value = {**value, **{f: _varied(value[f], i) for f in self.vary}}
        if not envelope:
            return value
        out = {**sample, "value": value}
        if sample.get("timestamp") is not None:
            out["timestamp"] = sample["timestamp"] + r * self.spans[topic]
        return out


def load_samples(setting, vary, topics, folder: Path | None, where: str,
                 id_field: str | None = None) -> SampleRecords:
    """The samples ``SAMPLES`` names for ``topics`` (a pipeline file's INPUT), each line
    checked (and, with ``id_field``, that its value can carry the identity);
    PipelineFileError naming the file and line of the first that is wrong."""
    if isinstance(setting, str | Path):
        paths = dict.fromkeys(topics, setting)
    elif isinstance(setting, dict) and set(setting) == set(topics):
        paths = setting
    else:
        raise PipelineFileError(f"{where}: SAMPLES must be a file name (JSON lines, relative "
                                "to the pipeline file) or a dict of each INPUT topic -> "
                                f"file name, not {setting!r:.80}")
    if isinstance(vary, str) or not all(isinstance(f, str) and f for f in vary or ()):
        raise PipelineFileError(f"{where}: VARY must be a list of field names, not "
                                f"{vary!r}")
    vary = tuple(dict.fromkeys(vary or ()))
    read: dict[Path, list] = {}
    out = {}
    for topic, name in paths.items():
        path = Path(name)
        if not path.is_absolute() and folder is not None:
            path = folder / path
        if path not in read:
            read[path] = _read(path, vary, where, id_field)
        out[topic] = read[path]
    return SampleRecords(out, vary)


def _read(path: Path, vary: tuple[str, ...], where: str, id_field) -> list:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineFileError(f"{where}: SAMPLES {path} cannot be read: "
                                f"{type(exc).__name__}: {exc}") from None
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        at = f"{where}: SAMPLES {path}:{lineno}"
        try:
            sample = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise PipelineFileError(f"{at}: not JSON: {exc}") from None
        _check(sample, vary, at, id_field)
        rows.append(sample)
    if not rows:
        raise PipelineFileError(f"{where}: SAMPLES {path} holds no record (one JSON "
                                "value per line)")
    return rows


def _check(sample, vary: tuple[str, ...], at: str, id_field: str | None) -> None:
    if not isinstance(sample, dict | list | str):
        raise PipelineFileError(f"{at}: a record is a JSON object, array or string (or an "
                                f"envelope with 'value'), not {sample!r:.60}")
    encode_record(sample, at, id_field, b"")
    value = sample["value"] if is_envelope(sample) else sample
    for f in vary:
        if not isinstance(value, dict) or f not in value:
            raise PipelineFileError(f"{at}: VARY field {f!r} is not in this sample's value")
        v = value[f]
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise PipelineFileError(f"{at}: VARY field {f!r} holds {v!r:.40}: an integer "
                                    "or a string can be varied")


def _varied(v, i: int):
    return i if isinstance(v, int) else f"{v}-{i}"


def _span(rows: list) -> int:
    stamps = [r["timestamp"] for r in rows if is_envelope(r) and r.get("timestamp") is not None]
    return max(stamps) - min(stamps) + 1 if stamps else 0


__all__ = ["SampleRecords", "load_samples"]
