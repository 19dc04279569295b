"""Every file format of a run, its name and version stated once, and the one header check.

A reader rejects a file of an unknown format or version with :class:`RunFormatError`
naming the file. JSON documents carry ``{"format": ..., "version": ...}`` at the top;
JSON-lines files carry them in a first ``{"type": "header", ...}`` line.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from verifier.rundata.errors import VerifierError

#: format name -> the version this tool writes and reads (docs/formats.md)
FORMATS: dict[str, int] = {
    "run-config": 1,          # RUN/config.json (§5)
    "producer-history": 1,    # RUN/histories/<pid>.jsonl (§2)
    "nemesis-history": 1,     # RUN/nemesis.jsonl (§3)
    "observations": 1,        # RUN/observations/ (§4)
    "observer-progress": 1,   # RUN/observations/progress/<isolation>.json
    "live-state": 1,          # RUN/checkpoints/live-<isolation>/state-<batch>.json
    "live-summary": 1,        # RUN/anomalies/<isolation>/summary.json
    "drain": 2,               # RUN/drain.json (§4.2; v2: per partition, extended on progress)
    "proxy-connections": 2,   # RUN/connections.jsonl (v2: per-API counts, activity)
    "verdict": 1,             # RUN/verdict.json (docs/expectations.md §4)
    "selftest": 1,            # RUN/selftest.json (chaos --selftest, docs/expectations.md)
    "generator-start-failures": 1,  # RUN/generators-failed.json (§5)
    "chaos-matrix": 1,        # OUT/verdict.json: the scenario x mode grid
    "versions-grid": 1,       # OUT/versions.json: Kafka version x client x mode (§7)
    "known-bugs-grid": 1,     # OUT/known-bugs.json: bug x combination against its status
    "pipeline-readback": 1,   # RUN/pipelines/<name>/readback.json (§8)
    "pipeline-reference": 1,  # RUN/pipelines/<name>/reference.json (§8, issue 46)
    "app-readback": 1,        # RUN/apps/<name>/readback.json (docs/applications.md)
    "app-reference": 1,       # RUN/apps/<name>/reference.json (docs/applications.md)
    "shrink": 1,              # SHRINK_OUT/shrink.json: `verifier shrink`'s report (docs/shrink.md)
    "explore": 1,             # EXPLORE_OUT/explore.json: `verifier explore`'s ledger
}  # fmt: skip


@dataclass
class RunFormatError(VerifierError):
    """A run file is missing, corrupt or of an unknown format or version."""

    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def header(name: str, **fields: Any) -> dict[str, Any]:
    """The ``format``/``version`` pair of ``name``, plus ``fields``."""
    return {"format": name, "version": FORMATS[name], **fields}


def check_header(path: Path, doc: Any, name: str) -> dict:
    """Return ``doc`` if it is a ``name`` document of the version this tool reads."""
    version = FORMATS[name]
    if not isinstance(doc, dict) or doc.get("format") != name:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise RunFormatError(Path(path), f"expected format {name!r}, found {got!r}")
    if doc.get("version") != version:
        raise RunFormatError(
            Path(path),
            f"unknown {name} version {doc.get('version')!r} (this verifier reads {version})",
        )
    return doc


def read_json(path: Path, name: str, versions: tuple[int, ...] = ()) -> dict:
    """A JSON document of format ``name``; ``versions`` lists older versions this reader
    also accepts (besides the current)."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError(path, "missing")
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise RunFormatError(path, f"not valid JSON ({exc})") from None
    if isinstance(doc, dict) and doc.get("format") == name and doc.get("version") in versions:
        return doc
    return check_header(path, doc, name)


def write_json(path: Path, name: str, body: dict, *, indent: bool = False) -> Path:
    """Write a ``name`` document atomically, its header first."""
    return write_json_atomic(path, {**header(name), **body}, indent=indent)


def write_json_atomic(path: Path, data: dict, *, indent: bool = False) -> Path:
    """Write JSON so a concurrent reader sees the old file or the new one, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    opts = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    tmp.write_bytes(orjson.dumps(data, option=opts, default=str))
    os.replace(tmp, path)
    return path


def split_lines(path: Path, data: bytes) -> tuple[dict, bytes]:
    """A JSON-lines file's parsed header line and the remaining body, minus a torn last
    line (a SIGKILL tears at most the line being written).

    Only the first and the last line are looked at: splitting a history of millions of
    lines into Python objects costs more than parsing it.
    """
    end = len(data)
    if end and data[end - 1] == 0x0A:  # "\n"
        end -= 1
    if end == 0:
        raise RunFormatError(path, "empty file (no header line)")
    first = data.find(b"\n", 0, end)
    if first >= 0:
        last = data.rfind(b"\n", 0, end)
        if not parses(data[last + 1:end]):
            end = last
    head = data[:end] if first < 0 else data[:first]
    try:
        first_doc = orjson.loads(head)
    except orjson.JSONDecodeError:
        raise RunFormatError(path, "line 1: torn or not JSON (expected the header)") from None
    return first_doc, (data[first + 1:end] + b"\n") if 0 <= first < end else b""


def parses(line: bytes) -> bool:
    try:
        orjson.loads(line)
        return True
    except orjson.JSONDecodeError:
        return False


def read_jsonl(path: Path, name: str,
               versions: tuple[int, ...] = ()) -> tuple[dict, list[dict]]:
    """A small JSON-lines file of format ``name``: its header and every complete line.
    ``versions`` lists older versions this reader also accepts (besides the current)."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError(path, "missing")
    head, body = split_lines(path, path.read_bytes())
    if not (isinstance(head, dict) and head.get("format") == name
            and head.get("version") in versions):
        check_header(path, head, name)
    rows = []
    for i, line in enumerate(body.split(b"\n")):
        if line.strip():
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                raise RunFormatError(path, f"line {i + 2}: torn or not JSON") from None
    return head, rows
