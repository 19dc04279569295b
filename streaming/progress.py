"""Observer progress, readable from outside the observer process.

Two sources, both plain files:

- the **progress file** ``RUN/observations/progress/<isolation>.json``, replaced atomically
  by the sink after every batch it has completely written: the batch id, per partition
  the *position* the sink has written through (the batch's planned end offset from the
  checkpoint offsets log: position semantics, last + 1, so it reaches the log end even when
  the last offsets are transaction markers or aborted records) and the highest offset
  actually written;
- the **checkpoint** itself: ``offsets/<N>`` is written before batch N runs, ``commits/<N>``
  after the sink returned, so an offsets entry without a commit is a batch Spark will
  re-run with the same id and range after a restart.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata.errors import UsageError
from verifier.rundata.formats import check_header, header, read_json, write_json_atomic
from verifier.rundata.layout import layout

PROGRESS_FORMAT = "observer-progress"

#: {(topic, partition): offset}
Offsets = dict[tuple[str, int], int]


def progress_path(run_dir: Path, isolation: str) -> Path:
    return layout(run_dir).progress(isolation)


def checkpoint_dir(run_dir: Path, isolation: str) -> Path:
    """Each isolation level has its own checkpoint (notes/spark-kafka.md §4.5)."""
    return layout(run_dir).checkpoint(isolation)


@dataclass(frozen=True)
class Progress:
    """What one query's sink has completely written."""

    isolation: str
    sink: str
    batch: int
    position: Offsets  # next offset to read per partition, after the last written batch
    written: Offsets  # highest offset written per partition (absent: none yet)
    rows: int  # rows written by every observer process of the run so far
    t: int  # ms since the epoch

    def to_json(self) -> dict:
        return {
            **header(PROGRESS_FORMAT),
            "isolation": self.isolation, "sink": self.sink, "batch": self.batch,
            "position": _nest(self.position), "written": _nest(self.written),
            "rows": self.rows, "t": self.t,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict, source: Path) -> Progress:
        check_header(source, data, PROGRESS_FORMAT)
        return cls(isolation=data["isolation"], sink=data["sink"], batch=int(data["batch"]),
                   position=_flatten(data["position"]), written=_flatten(data["written"]),
                   rows=int(data["rows"]), t=int(data["t"]))


def write_progress(run_dir: Path, progress: Progress) -> None:
    write_json_atomic(progress_path(run_dir, progress.isolation), progress.to_json())


def read_progress(run_dir: Path, isolation: str) -> Progress | None:
    """The last progress the observer wrote at ``isolation``, or None before its first batch."""
    path = progress_path(run_dir, isolation)
    if not path.is_file():
        return None
    return Progress.from_json(read_json(path, PROGRESS_FORMAT), path)


def now_ms() -> int:
    return int(time.time() * 1000)


# --- the checkpoint ----------------------------------------------------------------


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def offset_log_batches(checkpoint: Path) -> list[int]:
    """Batch ids with a planned range (``offsets/<N>``)."""
    return _batch_ids(Path(checkpoint) / "offsets")


def commit_log_batches(checkpoint: Path) -> list[int]:
    """Batch ids whose sink returned and Spark committed (``commits/<N>``)."""
    return _batch_ids(Path(checkpoint) / "commits")


def planned_end_offsets(checkpoint: Path, batch: int) -> Offsets:
    """Batch ``batch``'s end offsets (exclusive) from ``offsets/<batch>``.

    The file is ``v1``, a metadata line, then one JSON line per source; the observer's
    queries have exactly one Kafka source: ``{"topic": {"0": next_offset, ...}}``.
    """
    path = Path(checkpoint) / "offsets" / str(batch)
    lines = path.read_text().splitlines()
    if len(lines) < 3 or lines[0] != "v1":
        raise UsageError(f"{path}: not a version 1 offsets log entry with one source")
    return _flatten(json.loads(lines[2]))


def uncommitted_batches(checkpoint: Path) -> list[int]:
    """Planned batches without a commit: what a restart will re-run (same id and range)."""
    committed = set(commit_log_batches(checkpoint))
    return [b for b in offset_log_batches(checkpoint) if b not in committed]


def _nest(offsets: Offsets) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = off
    return out


def _flatten(nested: dict[str, dict[str, int]]) -> Offsets:
    return {(t, int(p)): int(o) for t, parts in nested.items() for p, o in parts.items()}
