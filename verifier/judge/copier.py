"""The copier judged from its input (formats §2.1): was every committed input record
copied?

Pure: the run's records at read_committed, one row per (topic, partition, offset) with its
decoded identity (:func:`verifier.judge.pipeline.read_input_log`), in; the copier column's
``lost`` group out. A copy's identity is (copier pid, input partition, input offset): the
history checks already see a copy the copier planned and lost, or wrote twice
(duplicates by that identity); what they cannot see is an input record the copier never
planned, because its group's committed offsets were past it when it continued from them
(the copier reads them after each commit, as a restarted copier would: KAFKA-15449's
late TxnOffsetCommit commits an aborted transaction's offsets). Such a record is **lost**:
an input offset of a partition below the highest input offset of that partition copied
at read_committed, with no copy. Records past the last copy are not judged (the copier
stops with the load, behind its input).
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from verifier.judge.model import LOST, CheckOutcome, Group
from verifier.judge.pipeline import _timeline  # the same per-second buckets
from verifier.rundata.vocab import READ_COMMITTED

KINDS = (LOST,)


def skipped(copier_pid: str, input_topic: str, output_topic: str,
            log: list[dict]) -> list[dict]:
    """Input records (rows of ``log``: topic, partition, offset, pid, seq, ts_send) the
    copier ``copier_pid`` skipped: below its highest copy of their partition, with no copy
    of their own (a copy's ``p`` and ``seq`` are the input partition and offset)."""
    copied: dict[int, set[int]] = defaultdict(set)
    for r in log:
        if r["topic"] == output_topic and r["pid"] == copier_pid:
            copied[r["p"]].add(r["seq"])
    out = []
    for r in log:
        if r["topic"] != input_topic:
            continue
        got = copied.get(r["partition"], set())
        if got and r["offset"] < max(got) and r["offset"] not in got:
            out.append({"kind": LOST, "topic": input_topic, "partition": r["partition"],
                        "isolation": READ_COMMITTED, "reader": copier_pid, "pid": r["pid"],
                        "seq": r["seq"], "offset": r["offset"], "t": r.get("ts_send"),
                        "evidence": {"copier": copier_pid, "input_offset": r["offset"],
                                     "copied_up_to": max(got), "copies_of_partition": len(got),
                                     "why": "an input record the copier never copied, "
                                            "below input records it copied: its group's "
                                            "committed offsets were past it when it "
                                            "continued from them"}})
    out.sort(key=lambda r: (r["partition"], r["offset"]))
    return out


def judge(config, log: pa.Table, cap: int = 20) -> list[CheckOutcome]:
    """One outcome per copier of the run (``config``: a RunConfig), its skipped input
    records as the ``lost`` group of its column at read_committed."""
    copiers = [p for p in config.producers.values() if p.input_topic]
    if not copiers:
        return []
    rows = log.select(["topic", "partition", "offset", "pid", "p", "seq", "ts_send"]).to_pylist()
    outcomes = []
    for spec in copiers:
        found = skipped(spec.pid, spec.input_topic, spec.topic, rows)
        outcome = CheckOutcome(f"copier-input:{spec.pid}", KINDS)
        if found:
            outcome.groups.append(Group(LOST, spec.mode, READ_COMMITTED, len(found),
                                        found[:cap], _timeline(found)))
        outcomes.append(outcome)
    return outcomes


def judge_run(run_dir, config, cap: int = 20) -> list[CheckOutcome]:
    """The copiers of a run folder (none: no outcome); a check that cannot run is
    UNKNOWN with its traceback."""
    import time
    import traceback

    if not any(p.input_topic for p in config.producers.values()):
        return []
    from verifier.judge.pipeline import read_input_log

    start = time.perf_counter()
    try:
        outcomes = judge(config, read_input_log(run_dir, READ_COMMITTED), cap)
    except Exception as exc:  # noqa: BLE001 - a check that cannot run is UNKNOWN
        outcomes = [CheckOutcome(f"copier-input:{p.pid}", KINDS, error=traceback.format_exc(),
                                 summary=f"{type(exc).__name__}: {exc}"[:300])
                    for p in config.producers.values() if p.input_topic]
    for o in outcomes:
        o.seconds = time.perf_counter() - start
    return outcomes


__all__ = ["KINDS", "judge", "judge_run", "skipped"]
