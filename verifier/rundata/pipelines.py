"""The pipelines under test in a run folder: where each one's files are, and the format of
what the tool read back from its output (docs/formats.md §8).

    RUN/pipelines/<name>/checkpoint/           its Spark checkpoint (the live one)
    RUN/pipelines/<name>/checkpoint.lost-<k>/  a checkpoint the checkpoint-lost fault
                                               took away (kept: its batches are evidence)
    RUN/pipelines/<name>/output/               its output folder (file and Delta sinks)
    RUN/pipelines/<name>/ready.json            written once its query started
    RUN/pipelines/<name>/holding               present while a batch holds (fault window):
                                               the hold marker, JSON (write_marker)
    RUN/pipelines/<name>/holding.written       the driver's word that the held batch's
                                               other tasks have written (written_path)
    RUN/pipelines/<name>/output.parquet        the read-back output rows, decoded
    RUN/pipelines/<name>/readback.json         how they were read, and every batch's
                                               planned end offsets per checkpoint

config.json lists the pipelines under ``pipelines``: name -> {spec, guarantee,
isolation, output_topic, hold_ms}.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from verifier.rundata.formats import RunFormatError, read_json, write_json

READBACK_FORMAT = "pipeline-readback"

#: the read-back rows: the decoded identity of every output row (formats §4's identity
#: columns), and the batch and task attempt (``<stage>.<partition>.<attempt>``) that wrote
#: it when the output says so (the ``task`` column came with issue 34: files without it
#: read as null)
OUTPUT_SCHEMA = pa.schema([
    ("run", pa.string()), ("pid", pa.string()), ("ses", pa.int32()), ("p", pa.int32()),
    ("seq", pa.int64()), ("txn", pa.int64()), ("ts_send", pa.int64()),
    ("foreign", pa.bool_()), ("error", pa.string()), ("batch", pa.int64()),
    ("task", pa.string()),
])  # fmt: skip

@dataclass(frozen=True)
class PipelineLayout:
    """The paths of one pipeline of a run. Building one touches nothing on disk."""

    run_dir: Path
    name: str

    @property
    def root(self) -> Path:
        return Path(self.run_dir) / "pipelines" / self.name

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    def lost_checkpoints(self) -> list[Path]:
        """Checkpoints taken away by the checkpoint-lost fault, oldest first."""
        found = self.root.glob("checkpoint.lost-*") if self.root.is_dir() else []
        return sorted(found, key=lambda p: int(p.name.rsplit("-", 1)[1]))

    def checkpoints(self) -> list[Path]:
        """Every checkpoint the pipeline had, in the order it used them: the lost ones,
        then the live one (each a generation of its batches)."""
        return [*self.lost_checkpoints(), self.checkpoint]

    def next_lost_checkpoint(self) -> Path:
        return self.root / f"checkpoint.lost-{len(self.lost_checkpoints())}"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def ready(self) -> Path:
        return self.root / "ready.json"

    @property
    def holding(self) -> Path:
        return self.root / "holding"

    @property
    def rows(self) -> Path:
        return self.root / "output.parquet"

    @property
    def readback(self) -> Path:
        return self.root / "readback.json"

    @property
    def log_name(self) -> str:
        return f"pipeline-{self.name}"


def write_marker(path: Path, batch: int | None, where: str, extra: dict | None = None) -> None:
    """The hold marker (streaming.pipelines.hold): when the hold began (``t``, s), which
    batch, from where (``foreachBatch``, ``source`` or ``task``), by which process, and
    ``extra`` (a task hold's task); written whole (rename), so a reader never sees half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"t": round(time.time(), 3), "batch": batch, "where": where,
                               "pid": os.getpid(), **(extra or {})}) + "\n")
    tmp.replace(path)


def written_path(marker: Path) -> Path:
    """Beside the marker, written by the driver (streaming.pipelines.driver) once every
    other task of the held batch's stage has completed: their output is written (a Kafka
    sink's task flushes its producer when it commits), so a kill replays written rows."""
    return marker.with_name(marker.name + ".written")


def write_written(marker: Path, batch: int | None) -> None:
    """The driver's word that the held batch's other tasks have written (whole, renamed)."""
    out = written_path(marker)
    tmp = out.with_name(f".{out.name}")
    tmp.write_text(json.dumps({"t": round(time.time(), 3), "batch": batch}) + "\n")
    tmp.replace(out)


def parse_marker(text: str) -> dict | None:
    """A hold marker's (or its written file's) content, or None when it is not one
    (empty: being written, or an older plain timestamp)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "t" in data else None


def read_marker(path: Path) -> dict | None:
    """The marker at ``path`` (:func:`parse_marker`); None when there is none."""
    try:
        return parse_marker(Path(path).read_text())
    except OSError:
        return None


def write_readback(where: PipelineLayout, rows: pa.Table, info: dict) -> None:
    """The read-back rows, then the document that says they are complete."""
    where.root.mkdir(parents=True, exist_ok=True)
    tmp = where.rows.with_name(".output.parquet.tmp")
    pq.write_table(rows.select(OUTPUT_SCHEMA.names).cast(OUTPUT_SCHEMA), tmp)
    tmp.replace(where.rows)
    write_json(where.readback, READBACK_FORMAT, {**info, "rows": rows.num_rows})


def read_readback(where: PipelineLayout) -> tuple[pa.Table, dict]:
    """(rows, readback.json) of one pipeline; RunFormatError when it was never read back."""
    info = read_json(where.readback, READBACK_FORMAT)
    if info.get("error"):
        raise RunFormatError(where.readback, f"its output could not be read back: "
                                             f"{info['error']}")
    try:
        rows = pq.read_table(where.rows)
        for name in OUTPUT_SCHEMA.names:  # a column added later: null in older runs
            if name not in rows.column_names:
                rows = rows.append_column(name, pa.nulls(rows.num_rows,
                                                         OUTPUT_SCHEMA.field(name).type))
        rows = rows.select(OUTPUT_SCHEMA.names).cast(OUTPUT_SCHEMA)
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise RunFormatError(where.rows, f"unreadable: {exc}") from None
    return rows, info


__all__ = ["OUTPUT_SCHEMA", "READBACK_FORMAT", "PipelineLayout", "parse_marker",
           "read_marker", "read_readback", "write_marker", "write_readback", "write_written",
           "written_path"]
