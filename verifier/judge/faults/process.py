"""Process faults (producer-kill, observer-kill, process-kill, checkpoint-lost,
process-pause) as the verdict sees them.

A fault on a process concerns the columns that process serves: a producer's (by its mode),
the observer's (every producer column), a pipeline's (its own column). What it acted on:

- a producer: the sends not yet acknowledged at the kill (or pause), and for a
  transactional column the open transaction's records;
- the observer or a pipeline's driver: the batches planned and not committed at the
  kill, with their records (from the query's checkpoint: ``offsets/N`` written,
  ``commits/N`` not).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable

from verifier.judge.faults.facts import Batch, ColumnSpec, RunFacts, Sends, Txn
from verifier.judge.faults.family import (
    PIPELINE_PREFIX,
    Family,
    is_producer_column,
    process_target,
)
from verifier.judge.faults.windows import Window

OBSERVER = "observer"
#: producer:<mode>, or producer:<mode>/<client>: that mode's generators
PRODUCER_PREFIX = "producer:"
#: what a kind does to its process, as the exposure says it (the others kill)
ACTS = {"process-pause": "pause"}

#: (fault kind, start detail) -> more of what a kill hit, said after the count
Note = Callable[[str, dict], str]


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    proc = process_target(w)
    if proc is None:
        return False
    if proc == OBSERVER:
        return is_producer_column(col)
    if proc.startswith(PIPELINE_PREFIX):
        return col.pipeline == proc.removeprefix(PIPELINE_PREFIX)
    if proc.startswith(PRODUCER_PREFIX):
        mode = proc.removeprefix(PRODUCER_PREFIX).split("/")[0]
        return is_producer_column(col) and col.mode == mode
    return is_producer_column(col) and producers_mode.get(proc) == col.mode


def _unacked_at(sends: Sends, t: int) -> int:
    hi = bisect.bisect_right(sends.invoked, t)
    return sum(1 for i in range(hi) if sends.done[i] is None or sends.done[i] > t)


def _open_txn_records(sends: Sends, txns: list[Txn], t: int) -> int:
    open_ids = {x.txn for x in txns if x.begin <= t and (x.end is None or x.end > t)}
    if not open_ids:
        return 0
    hi = bisect.bisect_right(sends.invoked, t)
    return sum(1 for i in range(hi) if sends.txn[i] in open_ids)


def batch_at(batches: list[Batch], t: int) -> Batch | None:
    """The batch planned and not committed at ``t`` (the replay a kill then forces)."""
    for b in batches:
        if b.planned <= t and (b.committed is None or b.committed > t):
            return b
    return None


#: the kill detail's ``hold`` of a real-time query's marker (streaming.pipelines.triggers)
REAL_TIME = "real-time"


def logged_after(batches: list[Batch], t: int) -> Batch | None:
    """A real-time batch in flight at ``t``: Spark's real-time mode writes a batch's
    offsets at its end, so the batch a kill left in flight is the first logged after it,
    as the restarted query ran it again (from the last commit, with what came since)."""
    return min((b for b in batches if b.planned > t), key=lambda b: b.planned, default=None)


def _aged_out(detail: dict, batches: list[Batch]) -> int | None:
    """The records of the batch a kill's detail names as in flight (its trigger saw it
    uncommitted) when the checkpoint no longer keeps it: a query keeps its latest 20
    batches (``spark.sql.streaming.minBatchesToRetain``, streaming.session), and a
    pipeline's 10-s batches on the standalone cluster pass that within a run (2026-11-28:
    a Kafka sink killed in its batch 1 and 2, 300 records written twice, counted 0 from
    a checkpoint starting at batch 3). None when the detail does not say so."""
    batch = detail.get("batch")
    in_flight = detail.get("batch_in_flight", detail.get("mid_batch"))
    if not in_flight or not isinstance(batch, int) or not batches or \
            batch >= min(b.batch for b in batches):
        return None
    offsets = detail.get("batch_offsets")
    return offsets if isinstance(offsets, int) and offsets > 0 else 1


def _records(batch: Batch, topics: Iterable[str] | None) -> int:
    want = None if topics is None else set(topics)
    return sum(max(0, e - s) for (topic, _), (s, e) in batch.ranges.items()
               if want is None or topic in want)


def _no_note(fault: str, detail: dict) -> str:
    return ""


def _batches_acted_on(w: Window, col: ColumnSpec, facts: RunFacts, proc: str,
                      note: Note) -> tuple[int | None, str]:
    """A kill of the observer or a pipeline's driver: the batches it left in flight."""
    if proc == OBSERVER:
        readers = [f"observer/{iso}" for iso in col.isolations]
        topics: Iterable[str] | None = col.topics
    else:
        readers, topics = [proc], None
    known = [r for r in readers if r in facts.batches]
    if not known:
        mid = w.start_detail.get("batch_in_flight", w.start_detail.get("mid_batch"))
        if mid is None:
            return None, "checkpoint not found"
        return int(bool(mid)), "batches in flight at the kill (from the kill's detail)"
    n = batches = 0
    real_time = w.start_detail.get("hold") == REAL_TIME
    for r in known:
        b = batch_at(facts.batches[r], w.start)
        if b is None and real_time:
            b = logged_after(facts.batches[r], w.start)
        if b is not None:
            batches += 1
            n += _records(b, topics) if b.ranges else 1
    aged = _aged_out(w.start_detail, facts.batches[proc]) \
        if batches == 0 and known == [proc] else None
    if aged is not None:
        return aged, ("records of 1 batch(es) planned and not committed at the kill "
                      "(from the kill's detail: the checkpoint keeps only its latest "
                      "batches)" + note(w.fault, w.start_detail))
    if real_time:
        return n, ("records of the real-time batch in flight at the kill, as its restart "
                   "ran it (its offsets are logged at its end)" + note(w.fault, w.start_detail))
    return n, (f"records of {batches} batch(es) planned and not committed at the kill"
               + note(w.fault, w.start_detail))


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts,
             note: Note = _no_note) -> tuple[int | None, str]:
    proc = process_target(w)
    if proc is not None and (proc.startswith(PIPELINE_PREFIX) or proc == OBSERVER):
        return _batches_acted_on(w, col, facts, proc, note)
    unacked = opened = 0  # a producer
    for pid in col.pids:
        s = facts.sends.get(pid)
        if s is None:
            continue
        unacked += _unacked_at(s, w.start)
        opened += _open_txn_records(s, facts.txns.get(pid, []), w.start)
    act = ACTS.get(w.fault, "kill")
    if col.transactional:
        return unacked + opened, (f"sends unacknowledged ({unacked}) and open "
                                  f"transaction records ({opened}) at the {act}")
    return unacked, f"sends unacknowledged at the {act}"


FAMILY = Family("process", ("producer-kill", "observer-kill", "process-kill",
                            "checkpoint-lost", "process-pause"), concerns, acted_on)
