"""The live checks inside the observer: state kept beside Spark's checkpoint, per batch.

The sink (streaming.sinks) hands each batch it has written to :class:`LiveSink`, which
applies :class:`verifier.judge.definitions.stream.LiveChecks` (the anomaly definitions,
incrementally) and persists, in this order:

1. ``RUN/anomalies/<isolation>/<observation file name>``: the batch's anomalies (none:
   no file), named after the observation file they were found in;
2. ``RUN/checkpoints/live-<isolation>/state-<batch>.json``: the state after the batch
   (the last :data:`KEEP` are kept);
3. ``RUN/anomalies/<isolation>/summary.json``: the counts so far, for the progress line.

The live state follows the sink's own semantics, so that it always equals a fold of the
observation files on disk:

- exactly-once: Spark re-runs an uncommitted batch with the same id and range and the sink
  *replaces* its file, so the state rolls back too: batch N starts from the state after
  the newest batch below N;
- at-least-once: a re-run writes a second file; the state goes on from the newest
  snapshot, so the replayed rows are delivery duplicates, as the batch checks see them.

Observation files written after the snapshot a process starts from (a kill between the
file and its snapshot) are applied first (:func:`restore`); :func:`final` does the same
offline, for the comparison with the batch checks after the drain.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from streaming.observations import SCHEMA, output_dir, write_json_atomic
from verifier.judge.definitions.stream import ANOMALY_SCHEMA, LiveChecks, anomaly_table
from verifier.rundata.formats import RunFormatError, header, read_json
from verifier.rundata.layout import layout

log = logging.getLogger(__name__)

KEEP = 3  # snapshots kept: the exactly-once replay of the newest batch needs the one before
_BATCH = re.compile(r"batch-(\d{10})")
_STATE = re.compile(r"state-(\d+)\.json")


def batch_of(name: str) -> int:
    m = _BATCH.match(name)
    if m is None:
        raise ValueError(f"not an observation file name: {name}")
    return int(m.group(1))


def _snapshots(run_dir: Path, isolation: str) -> list[tuple[int, Path]]:
    folder = layout(run_dir).live_state(isolation)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _STATE.fullmatch(p.name))]
    return sorted(found)


def observation_files(run_dir: Path, isolation: str) -> list[Path]:
    """The Spark observer's files in the order they were written (batch id, then time)."""
    folder = output_dir(run_dir, "spark", isolation)
    files = sorted(((batch_of(p.name), p.name, p) for p in folder.glob("batch-*.parquet")),
                   key=lambda x: x[:2]) if folder.is_dir() else []
    ids = [b for b, _, _ in files]
    shared = {b for b, nxt in zip(ids, ids[1:], strict=False) if b == nxt}
    if not shared:  # one file per batch (always with the exactly-once sink): no stat
        return [p for _, _, p in files]
    # a replay of the naive sink: the files of one batch in the order they were written
    return sorted((p for _, _, p in files), key=lambda p: (
        batch_of(p.name), p.stat().st_mtime_ns if batch_of(p.name) in shared else 0, p.name))


def _covered(name: str, batch: int | None, files: list[str], sink: str) -> bool:
    """Is the observation file ``name`` part of a state whose last batch is ``batch``?"""
    if batch is None:
        return False
    b = batch_of(name)
    if sink == "exactly-once":
        return b <= batch
    return b < batch or (b == batch and name in files)


class Restored:
    """A state caught up with the files on disk: the snapshot it started from (its batch
    and the files of that batch) and what catching up found."""

    def __init__(self, live: LiveChecks, batch: int | None, files: list[str]) -> None:
        self.live, self.batch, self.files = live, batch, files
        self.last_files = list(files)  # the files of live.batch, after catching up
        self.found: list[dict] = []

    def covers(self, name: str, sink: str) -> bool:
        """Was the observation file ``name`` part of the snapshot restored from?"""
        return _covered(name, self.batch, self.files, sink)


def restore(run_dir: Path, isolation: str, sink: str, run: str, topics: dict[str, str],
            before: int | None = None, write: bool = True,
            current: str | None = None) -> Restored:
    """The state to continue from, caught up with the observation files on disk.

    ``before``: the batch about to run (exactly-once: start from the newest snapshot
    below it, and leave its own file, which the run replaces, alone); ``current``: the
    file that batch has just written (the caller judges it). Anomalies found catching up
    are written to RUN/anomalies when ``write``."""
    snaps = _snapshots(run_dir, isolation)
    if sink == "exactly-once" and before is not None:
        snaps = [(b, p) for b, p in snaps if b < before]
    if snaps:
        doc = read_json(snaps[-1][1], "live-state")
        live = LiveChecks.from_json(doc, snaps[-1][1])
        out = Restored(live, live.batch, list(doc.get("files", [])))
    else:
        out = Restored(LiveChecks(run, isolation, topics), None, [])
    for f in observation_files(run_dir, isolation):
        b = batch_of(f.name)
        if f.name == current or out.covers(f.name, sink) or (
                before is not None and sink == "exactly-once" and b >= before):
            continue
        prev = out.live.batch
        rows = out.live.apply(pq.read_table(f, schema=SCHEMA), b)
        out.last_files = [*out.last_files, f.name] if b == prev else [f.name]
        out.found += rows
        if write:
            _write_anomalies(run_dir, isolation, f.name, rows)
    return out


def final(run_dir: Path, isolation: str, sink: str, run: str,
          topics: dict[str, str], read=None) -> tuple[LiveChecks, pa.Table] | None:
    """Every live anomaly of a finished run at ``isolation`` (the files the observer wrote
    for what its last snapshot covers, plus what the files after it add), and the final
    state; None when the observer ran without live checks. ``read(path)``: the anomalies
    file as Arrow (a follower that read them during the run hands its copies)."""
    if not _snapshots(run_dir, isolation):
        return None
    r = restore(run_dir, isolation, sink, run, topics, write=False)
    folder = layout(run_dir).anomalies_of(isolation)
    tables = [anomaly_table(r.found)]
    for p in sorted(folder.glob("batch-*.parquet")):
        if r.covers(p.name, sink):
            tables.append(read(p) if read is not None else read_anomalies(p))
    return r.live, pa.concat_tables(tables)


def read_anomalies(path: Path) -> pa.Table:
    """One batch's anomalies file."""
    return pq.read_table(path, schema=ANOMALY_SCHEMA)


def newest_state(run_dir: Path, isolation: str) -> LiveChecks | None:
    """The newest state snapshot the observer wrote at ``isolation`` (None: none yet);
    it may lag the files on disk by the batch being written."""
    for _, path in reversed(_snapshots(run_dir, isolation)):
        try:
            return LiveChecks.from_json(read_json(path, "live-state"), path)
        except (OSError, ValueError, RunFormatError):  # pruned while read: the one before
            continue
    return None


def _write_anomalies(run_dir: Path, isolation: str, name: str, rows: list[dict]) -> None:
    path = layout(run_dir).anomalies_of(isolation) / name
    if not rows:
        path.unlink(missing_ok=True)  # a re-run that found nothing replaces an old file
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{name}.tmp")
    pq.write_table(anomaly_table(rows), tmp)
    tmp.replace(path)


def read_summary(run_dir: Path, isolation: str) -> dict | None:
    """The live counts so far at ``isolation`` (None before the first batch)."""
    path = layout(run_dir).anomalies_of(isolation) / "summary.json"
    return read_json(path, "live-summary") if path.is_file() else None


class LiveSink:
    """The live checks of one query (one isolation level), driven by its sink."""

    def __init__(self, run_dir: Path, isolation: str, sink: str, run: str,
                 topics: dict[str, str]) -> None:
        self.run_dir, self.isolation, self.sink = Path(run_dir), isolation, sink
        self.run, self.topics = run, dict(topics)
        self.live: LiveChecks | None = None
        self.files: list[str] = []
        self.state_dir = layout(run_dir).live_state(isolation)

    def __call__(self, table: pa.Table, batch_id: int, file_name: str | None) -> list[dict]:
        """Judge a batch the sink has written (``file_name``; None: no rows); persist."""
        if self.live is None or (self.sink == "exactly-once" and self.live.batch is not None
                                 and batch_id <= self.live.batch):  # fmt: skip
            r = restore(self.run_dir, self.isolation, self.sink, self.run, self.topics,
                        before=batch_id, current=file_name)
            self.live, self.files = r.live, r.last_files
        rows = self.live.apply(table, batch_id)
        if file_name is not None:
            _write_anomalies(self.run_dir, self.isolation, file_name, rows)
            same = [n for n in self.files if batch_of(n) == batch_id]
            self.files = [*same, file_name]
        else:
            self.files = [n for n in self.files if batch_of(n) == batch_id]
        self._snapshot(batch_id)
        return rows

    def _snapshot(self, batch_id: int) -> None:
        assert self.live is not None
        doc = {**self.live.to_json(), "files": self.files}
        self.state_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.state_dir / f"state-{batch_id}.json", doc)
        for _, old in _snapshots(self.run_dir, self.isolation)[:-KEEP]:
            old.unlink(missing_ok=True)
        write_json_atomic(layout(self.run_dir).anomalies_of(self.isolation) / "summary.json",
                          {**header("live-summary"), **self.live.summary()})


__all__ = ["LiveSink", "Restored", "final", "newest_state", "observation_files", "read_anomalies",
           "read_summary", "restore"]
