"""Observer progress, readable from outside the observer process.

Two sources, both plain files:

- the **progress file** ``RUN/observations/progress/<isolation>.json``, replaced atomically
  by the sink after every batch it has completely written: the batch id, per partition
  the *position* the sink has written through (the batch's planned end offset from the
  checkpoint offsets log: position semantics, last + 1, so it reaches the log end even when
  the last offsets are transaction markers or aborted records) and the highest offset
  actually written;
- the **checkpoint** itself, read by :mod:`verifier.rundata.checkpoint`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata.checkpoint import Offsets
from verifier.rundata.formats import check_header, header, read_json, write_json_atomic
from verifier.rundata.layout import layout

PROGRESS_FORMAT = "observer-progress"


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


def _nest(offsets: Offsets) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = off
    return out


def _flatten(nested: dict[str, dict[str, int]]) -> Offsets:
    return {(t, int(p)): int(o) for t, parts in nested.items() for p, o in parts.items()}
