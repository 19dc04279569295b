"""Load a run folder (docs/formats.md §2-§5) into :class:`RunData`.

Histories are parsed by pyarrow's multi-threaded JSON reader (C++) against an explicit
schema and handed to Spark as one Arrow table: much faster than Python-level parsing or
Spark's JSON source on two cores. Only when pyarrow rejects a file do we scan it line by
line, to name the torn line. Observations are read by Spark where they lie, so a run on a
cluster file system is never pulled through the driver.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.json as pajson

from verifier.judge.model import ISOLATIONS, Drain, ProducerSpec, RunConfig, RunData
from verifier.rundata.errors import VerifierError

CONFIG_VERSION = 1
HISTORY_VERSION = 1
NEMESIS_VERSION = 1
OBSERVATIONS_VERSION = 1
DRAIN_VERSION = 1

#: the history fields the checks read; others (config, error, os_pid) are ignored
HISTORY_SCHEMA = pa.schema([
    ("type", pa.string()), ("f", pa.string()), ("ses", pa.int32()), ("p", pa.int32()),
    ("seq", pa.int64()), ("txn", pa.int64()), ("abort", pa.bool_()), ("offset", pa.int64()),
    ("t", pa.int64()),
])  # fmt: skip

#: observation columns and the Spark type each is cast to
OBSERVATION_COLUMNS = {
    "reader": "string", "isolation": "string", "topic": "string", "partition": "int",
    "offset": "bigint", "run": "string", "pid": "string", "ses": "int", "p": "int",
    "seq": "bigint", "txn": "bigint", "abort": "boolean", "ts_send": "bigint",
    "ts_broker": "bigint", "foreign": "boolean", "error": "string",
}  # fmt: skip

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass
class RunFormatError(VerifierError):
    """A run file is missing, corrupt or of an unknown version."""

    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass
class RunFiles:
    """Everything of a run folder that is read without Spark (validated on read)."""

    config: RunConfig
    history: pa.Table
    started: dict[str, bool]
    combos: list[tuple[str, str]]
    drain: Drain
    nemesis: list[dict]


def read_run_files(run_dir: Path | str) -> RunFiles:
    """Read and validate every small file of a run: fails fast, before Spark starts."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunFormatError(run_dir, "not a run folder (no such directory)")
    config = load_config(run_dir / "config.json")
    history, started = read_histories(run_dir / "histories", config)
    return RunFiles(
        config=config, history=history, started=started,
        combos=observation_combos(run_dir / "observations"),
        drain=load_drain(run_dir / "drain.json"),
        nemesis=load_nemesis(run_dir / "nemesis.jsonl", config.run),
    )  # fmt: skip


def load_run(spark, run_dir: Path | str, files: RunFiles | None = None) -> RunData:
    """Read every input file of a finished run; raise :class:`RunFormatError` on bad input."""
    f = files or read_run_files(run_dir)
    return RunData(
        config=f.config, events=None, history=f.history,
        observations=load_observations(spark, Path(run_dir) / "observations", f.combos),
        combos=f.combos, drain=f.drain, drain_partitions=drain_frame(spark, f.drain),
        started=f.started, nemesis=f.nemesis,
    )  # fmt: skip


def _read_json(path: Path, fmt: str, version: int) -> dict:
    if not path.is_file():
        raise RunFormatError(path, "missing")
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise RunFormatError(path, f"not valid JSON ({exc})") from None
    _check_header(path, doc, fmt, version)
    return doc


def _check_header(path: Path, doc, fmt: str, version: int) -> None:
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise RunFormatError(path, f"expected format {fmt!r}, found {got!r}")
    if doc.get("version") != version:
        raise RunFormatError(
            path, f"unknown {fmt} version {doc.get('version')!r} (this verifier reads {version})"
        )


def load_config(path: Path) -> RunConfig:
    """config.json: run id, scenario, sink and the producers with their modes."""
    doc = _read_json(path, "run-config", CONFIG_VERSION)
    try:
        producers = {}
        for pid, spec in doc["producers"].items():
            mode = str(spec["mode"])
            producers[pid] = ProducerSpec(
                pid=pid, mode=mode, expect=str(spec.get("expect", mode)), topic=str(spec["topic"])
            )
        config = RunConfig(
            run=str(doc["run"]), scenario=str(doc.get("scenario", "unnamed")),
            sink=str(doc.get("sink", "exactly-once")), producers=producers, seed=doc.get("seed"),
        )  # fmt: skip
    except (KeyError, TypeError, AttributeError) as exc:
        raise RunFormatError(path, f"missing or bad field: {exc}") from None
    from verifier.judge.expectations import PRESETS, SINKS

    for p in producers.values():
        if p.expect not in PRESETS:
            raise RunFormatError(path, f"producer {p.pid}: unknown mode {p.expect!r}")
    if config.sink not in SINKS:
        raise RunFormatError(path, f"unknown sink {config.sink!r} (one of {', '.join(SINKS)})")
    if not producers:
        raise RunFormatError(path, "empty run: no producers")
    return config


def _split_lines(path: Path, data: bytes) -> tuple[dict, bytes]:
    """The parsed header and the remaining body, minus a torn last line.

    Only the first and the last line are looked at: splitting a history of millions of
    lines into Python objects cost more than parsing it.
    """
    end = len(data)
    if end and data[end - 1] == 0x0A:  # "\n"
        end -= 1
    if end == 0:
        raise RunFormatError(path, "empty file (no header line)")
    first = data.find(b"\n", 0, end)
    if first >= 0:
        last = data.rfind(b"\n", 0, end)
        if not _parses(data[last + 1:end]):
            end = last  # a SIGKILL tears at most the line being written: the last one
    head = data[:end] if first < 0 else data[:first]
    try:
        header = orjson.loads(head)
    except orjson.JSONDecodeError:
        raise RunFormatError(path, "line 1: torn or not JSON (expected the header)") from None
    return header, (data[first + 1:end] + b"\n") if 0 <= first < end else b""


def _parses(line: bytes) -> bool:
    try:
        orjson.loads(line)
        return True
    except orjson.JSONDecodeError:
        return False


def _parse_body(path: Path, body: bytes) -> pa.Table:
    if body.strip() == b"":
        return HISTORY_SCHEMA.empty_table()
    opts = pajson.ParseOptions(explicit_schema=HISTORY_SCHEMA, unexpected_field_behavior="ignore")
    try:
        return pajson.read_json(io.BytesIO(body), parse_options=opts)
    except pa.ArrowInvalid as exc:
        # name the first bad line (+2: 1-based, after the header)
        for i, line in enumerate(body.split(b"\n")):
            if line.strip() and not _parses(line):
                raise RunFormatError(path, f"line {i + 2}: torn or not JSON") from None
        raise RunFormatError(path, f"bad field type ({exc})") from None


def read_histories(folder: Path, config: RunConfig) -> tuple[pa.Table, dict[str, bool]]:
    """All producer histories as one Arrow table of operations, plus pid -> started."""
    import pyarrow.compute as pc

    if not folder.is_dir():
        raise RunFormatError(folder, "missing (no producer histories)")
    tables, started = [], {}
    for pid in config.producers:
        path = folder / f"{pid}.jsonl"
        if not path.is_file():
            started[pid] = False  # a producer that never started: UNKNOWN for its mode
            continue
        header, body = _split_lines(path, path.read_bytes())
        _check_header(path, header, "producer-history", HISTORY_VERSION)
        if header.get("run") != config.run or header.get("pid") != pid:
            raise RunFormatError(
                path,
                f"header names run {header.get('run')!r} pid "
                f"{header.get('pid')!r}, config says {config.run!r} {pid!r}",
            )
        table = _parse_body(path, body)
        started[pid] = bool(pc.any(pc.equal(table["type"], "session")).as_py())
        ops = table.filter(pc.is_in(table["type"], pa.array(["invoke", "ok", "fail", "info"])))
        tables.append(ops.append_column("pid", pa.repeat(pa.scalar(pid, pa.string()),
                                                         ops.num_rows)))
    unknown = sorted(p.stem for p in folder.glob("*.jsonl") if p.stem not in config.producers)
    if unknown:
        raise RunFormatError(folder, f"histories of producers not in config.json: {unknown}")
    if not tables:
        raise RunFormatError(folder, "empty run: no producer history")
    table = pa.concat_tables(tables)
    if table.num_rows == 0:
        raise RunFormatError(folder, "empty run: the histories hold no operation")
    return table, started


def observation_combos(folder: Path) -> list[tuple[str, str]]:
    """(reader, isolation) folders holding Parquet files; checks the format marker."""
    _read_json(folder / "_format.json", "observations", OBSERVATIONS_VERSION)
    combos = []
    for rdir in sorted(p for p in folder.iterdir() if p.is_dir()):
        for idir in sorted(p for p in rdir.iterdir() if p.is_dir()):
            if idir.name not in ISOLATIONS or not _NAME.match(rdir.name):
                raise RunFormatError(idir, "unexpected folder (expected <reader>/<isolation>)")
            if any(idir.rglob("[!._]*.parquet")):  # dot files are being written
                combos.append((rdir.name, idir.name))
    if not combos:
        raise RunFormatError(folder, "empty run: no observation Parquet files")
    return combos


def load_observations(spark, folder: Path, combos: list[tuple[str, str]]):
    """Observation rows of every reader and isolation level, typed as format 1."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    frames = []
    for reader, iso in combos:
        d = folder / reader / iso
        try:
            if (d / "_spark_metadata").is_dir():
                # a streaming file sink: only files its log committed are part of the output
                df = spark.read.parquet(str(d))
            else:
                df = (
                    spark.read.option("recursiveFileLookup", "true")
                    .option("pathGlobFilter", "[!._]*.parquet")
                    .parquet(str(d))
                )
            missing = sorted(set(OBSERVATION_COLUMNS) - set(df.columns))
        except PySparkException as exc:
            raise RunFormatError(d, f"unreadable Parquet ({str(exc).splitlines()[0]})") from None
        if missing:
            raise RunFormatError(d, f"observation columns missing: {missing}")
        frames.append(
            df.select(*[F.col(c).cast(t).alias(c) for c, t in OBSERVATION_COLUMNS.items()])
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def load_drain(path: Path) -> Drain:
    """drain.json (docs/formats.md §4.2): completion, end offsets, what was behind."""
    doc = _read_json(path, "drain", DRAIN_VERSION)
    try:
        ends = doc.get("end_offsets") or {}
        rc, ru = ends.get("read_committed", {}), ends.get("read_uncommitted", {})
        parts = []
        for key in sorted(set(rc) & set(ru)):
            topic, _, part = key.rpartition("-")  # "<topic>-<partition>"
            parts.append({"topic": topic, "partition": int(part),
                          "end_read_committed": int(rc[key]),
                          "end_read_uncommitted": int(ru[key])})  # fmt: skip
        drain = Drain(completed=bool(doc["completed"]), partitions=parts,
                      behind=list(doc.get("behind", [])), deadline_s=doc.get("deadline_s"))
        drain.behind_keys()
        return drain
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RunFormatError(path, f"missing or bad field: {exc}") from None


def drain_frame(spark, drain: Drain):
    """drain.json's per-partition end offsets as a DataFrame (the hanging-txn check's input)."""
    rows = [(str(p["topic"]), int(p["partition"]), int(p["end_read_committed"]),
             int(p["end_read_uncommitted"])) for p in drain.partitions]  # fmt: skip
    schema = "topic string, partition int, end_read_committed bigint, end_read_uncommitted bigint"
    return spark.createDataFrame(rows, schema)


def load_nemesis(path: Path, run: str) -> list[dict]:
    """Nemesis operations (small: a few per fault); a torn last line is ignored."""
    if not path.is_file():
        raise RunFormatError(path, "missing (a run without faults still writes its header)")
    header, body = _split_lines(path, path.read_bytes())
    _check_header(path, header, "nemesis-history", NEMESIS_VERSION)
    ops = []
    for i, line in enumerate(body.split(b"\n")):
        if line.strip():
            try:
                ops.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                raise RunFormatError(path, f"line {i + 2}: torn or not JSON") from None
    return ops
