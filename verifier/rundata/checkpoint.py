"""A Spark Structured Streaming checkpoint, read from outside the query (the one reader).

The observer's queries (``RUN/checkpoints/<isolation>/``) and every pipeline's
(``RUN/pipelines/<name>/checkpoint/`` and the ``checkpoint.lost-<k>/`` the
checkpoint-lost fault took away) are read here, by the live progress, the drain, the
pipelines' process and read-back, the fault triggers and the exposure.

Two logs matter (notes/spark-kafka.md §4.5):

- ``offsets/<N>`` is written before batch N runs: ``v1``, a metadata line (JSON, with
  ``batchTimestampMs``), then one JSON line per source; the tool's queries have one Kafka
  source, ``{"topic": {"0": next_offset, ...}}``: the batch's end offsets, exclusive;
- ``commits/<N>`` is written after the sink returned, so an offsets entry without a
  commit is a batch Spark will re-run with the same id and range after a restart.

Hadoop's checksum files (``.N.crc``) and half-written entries of a killed driver are
skipped where a caller can do without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata.errors import UsageError

#: {(topic, partition): offset}
Offsets = dict[tuple[str, int], int]


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def offset_log_batches(checkpoint: Path) -> list[int]:
    """Batch ids with a planned range (``offsets/<N>``), ascending; [] without a log."""
    return _batch_ids(Path(checkpoint) / "offsets")


def commit_log_batches(checkpoint: Path) -> list[int]:
    """Batch ids whose sink returned and Spark committed (``commits/<N>``), ascending."""
    return _batch_ids(Path(checkpoint) / "commits")


def is_committed(checkpoint: Path, batch: int) -> bool:
    """Has Spark committed batch ``batch`` (``commits/<batch>`` exists)?"""
    return (Path(checkpoint) / "commits" / str(batch)).exists()


def uncommitted_batches(checkpoint: Path) -> list[int]:
    """Planned batches without a commit: what a restart will re-run (same id and range)."""
    committed = set(commit_log_batches(checkpoint))
    return [b for b in offset_log_batches(checkpoint) if b not in committed]


def batch_in_flight(checkpoint: Path) -> bool:
    """Is the latest planned batch (``offsets/N``) above the latest committed one? A
    driver killed now re-runs it after its restart. False without a checkpoint."""
    def last(ids) -> int:
        try:
            got = ids(checkpoint)
        except FileNotFoundError:  # the checkpoint-lost fault moved it meanwhile
            return -1
        return got[-1] if got else -1

    return last(offset_log_batches) > last(commit_log_batches)


def planned_times(checkpoint: Path) -> list[tuple[int, float]]:
    """(batch id, when its ``offsets/<N>`` was written, s since the epoch) for every
    planned batch, in no order; [] when the log is not readable (yet)."""
    folder = Path(checkpoint) / "offsets"
    try:
        return [(int(p.name), p.stat().st_mtime) for p in folder.iterdir()
                if p.name.isdigit()]
    except OSError:
        return []


def _flatten(nested: dict) -> Offsets:
    return {(t, int(p)): int(o) for t, parts in nested.items() for p, o in parts.items()}


def planned_end_offsets(checkpoint: Path, batch: int) -> Offsets:
    """Batch ``batch``'s end offsets (exclusive) from ``offsets/<batch>``.

    Strict: an entry that is not ``v1`` with a source line is a :class:`UsageError`; a
    missing one an ``OSError``, a torn source line a ``ValueError``."""
    path = Path(checkpoint) / "offsets" / str(batch)
    lines = path.read_text().splitlines()
    if len(lines) < 3 or lines[0] != "v1":
        raise UsageError(f"{path}: not a version 1 offsets log entry with one source")
    return _flatten(json.loads(lines[2]))


@dataclass(frozen=True)
class PlannedBatch:
    """One planned batch of a checkpoint, with when it was planned and committed."""

    batch: int
    #: ms: the entry's ``batchTimestampMs``, else when its file was written
    planned_ms: int
    #: ms: when ``commits/<batch>`` was written; None while not committed
    committed_ms: int | None
    #: its end offsets (exclusive); None when the entry names no source
    ends: Offsets | None


def planned_batches(checkpoint: Path) -> list[PlannedBatch]:
    """Every planned batch of a checkpoint, ascending; [] when it has no offsets log. An
    entry that does not parse (the driver died writing it: nothing was run) is left out."""
    checkpoint = Path(checkpoint)
    offsets, commits = checkpoint / "offsets", checkpoint / "commits"
    if not offsets.is_dir():
        return []
    committed = {}
    if commits.is_dir():
        committed = {int(p.name): p.stat().st_mtime_ns // 1_000_000
                     for p in commits.iterdir() if p.name.isdigit()}
    out = []
    for n in _batch_ids(offsets):
        path = offsets / str(n)
        try:
            lines = path.read_text().splitlines()
            meta = json.loads(lines[1]) if len(lines) > 1 else {}
            ends = _flatten(json.loads(lines[2])) if len(lines) > 2 else None
            planned = int(meta.get("batchTimestampMs") or path.stat().st_mtime_ns // 1_000_000)
        except (OSError, ValueError, AttributeError):
            continue
        out.append(PlannedBatch(n, planned, committed.get(n), ends))
    return out


def committed_end_offsets(checkpoint: Path) -> Offsets:
    """The end offsets of the latest committed batch: where a restart resumes; {} before
    the first commit."""
    committed = commit_log_batches(checkpoint)
    return planned_end_offsets(checkpoint, committed[-1]) if committed else {}


__all__ = ["Offsets", "PlannedBatch", "batch_in_flight", "commit_log_batches",
           "committed_end_offsets", "is_committed", "offset_log_batches",
           "planned_batches", "planned_end_offsets", "planned_times",
           "uncommitted_batches"]
