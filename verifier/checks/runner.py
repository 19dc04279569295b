"""Run every check, capture crashes, and reduce each result to counts plus a sample.

The runner is the only place that executes Spark jobs on the checks' frames. A check
that raises (while building its plan or while Spark runs it) becomes a
:class:`CheckOutcome` with its traceback: the verdict turns the modes it concerns to
UNKNOWN instead of the run crashing.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from verifier.checks import delivery, log, txn
from verifier.checks.derive import Derived
from verifier.checks.model import (
    ABORTED_READ,
    ANOMALY_COLUMNS,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    LOST,
    REORDER,
    TORN,
    UNSEEN,
    RunData,
)  # fmt: skip

#: (check name, function, anomaly kinds it can report), in the order they run
CHECKS: tuple[tuple[str, Callable[[Derived], DataFrame], tuple[str, ...]], ...] = (
    ("lost", delivery.check_lost, (LOST, UNSEEN)),
    ("duplicate-log", log.check_duplicates_log, (DUP_SAME, DUP_CROSS)),
    ("duplicate-delivery", log.check_duplicates_delivery, (DUP_DELIVERY,)),
    ("reorder", log.check_reorder, (REORDER,)),
    ("aborted-read", txn.check_aborted_read, (ABORTED_READ,)),
    ("torn-transaction", txn.check_torn, (TORN,)),
    ("hanging-transaction", txn.check_hanging, (HANGING,)),
    ("inconsistent-offset", log.check_inconsistent_offsets, (INCONSISTENT,)),
    ("foreign-record", log.check_foreign, (FOREIGN,)),
)

DEFAULT_SAMPLE = 20
BUCKET_MS = 1000  # timeline resolution; the report re-bins to its width


@dataclass
class Group:
    """Anomalies of one kind attributed to one mode at one isolation level (or None)."""

    kind: str
    mode: str
    isolation: str | None
    count: int
    sample: list[dict]
    timeline: list[tuple[int, int]] = field(default_factory=list)  # (bucket start ms, n)


@dataclass
class CheckOutcome:
    """What one check produced: groups, or the traceback of its crash."""

    name: str
    kinds: tuple[str, ...]
    groups: list[Group] = field(default_factory=list)
    error: str | None = None  # traceback text when the check crashed
    summary: str | None = None  # one line: exception class and first line of its message
    seconds: float = 0.0


def owner(run: RunData):
    """Column naming the mode an anomaly belongs to: by producer id, else by topic."""
    prods = run.config.producers.values()
    by_pid = F.create_map(*[x for p in prods for x in (F.lit(p.pid), F.lit(p.mode))])
    by_topic = F.create_map(*[x for t, m in {(p.topic, p.mode) for p in prods}
                              for x in (F.lit(t), F.lit(m))])  # fmt: skip
    return F.coalesce(
        F.try_element_at(by_pid, F.col("pid")),
        F.try_element_at(by_topic, F.col("topic")),
        F.lit("(unattributed)"),
    )


def summarize(run: RunData, anomalies: DataFrame, cap: int) -> list[Group]:
    """Counts per (kind, mode, isolation) and the first ``cap`` anomalies of each."""
    keys = ["kind", "mode", "isolation"]
    tagged = anomalies.withColumn("mode", owner(run))
    order = Window.partitionBy(*keys).orderBy("topic", "partition", "offset", "pid", "seq", "txn")
    tagged = tagged.withColumn("rn", F.row_number().over(order))
    row = F.struct(*[c for c, _ in ANOMALY_COLUMNS if c not in ("kind",)])
    got = (
        tagged.groupBy(*keys)
        .agg(
            F.max("rn").alias("count"),
            F.collect_list(F.when(F.col("rn") <= cap, row)).alias("sample"),
        )
        .collect()
    )
    groups = [Group(r["kind"], r["mode"], r["isolation"], int(r["count"]),
                    [_plain(s) for s in r["sample"]]) for r in got]  # fmt: skip
    if groups:  # the timeline costs a job: only when there is something to place on it
        bucket = (F.floor(F.col("t") / BUCKET_MS) * BUCKET_MS).cast("long")
        hist = {}
        for r in (
            tagged.where(F.col("t").isNotNull()).groupBy(*keys, bucket.alias("b")).count().collect()
        ):
            hist.setdefault((r["kind"], r["mode"], r["isolation"]), []).append((r["b"], r["count"]))
        for g in groups:
            g.timeline = sorted(hist.get((g.kind, g.mode, g.isolation), []))
    return groups


def _plain(row) -> dict:
    d = row.asDict(recursive=True)
    d["evidence"] = orjson.loads(d["evidence"]) if d.get("evidence") else {}
    return {k: v for k, v in d.items() if v is not None}


def run_checks(
    run: RunData,
    derived: Derived | None = None,
    cap: int = DEFAULT_SAMPLE,
    only: set[str] | None = None,
) -> list[CheckOutcome]:
    """Run every check (or those named in ``only``); never raises for a check's failure."""
    d = derived or Derived(run)
    outcomes = []
    try:
        for name, fn, kinds in CHECKS:
            if only is not None and name not in only:
                continue
            start = time.perf_counter()
            out = CheckOutcome(name, kinds)
            try:
                out.groups = summarize(run, fn(d), cap)
            except Exception as exc:  # noqa: BLE001 - a crashed check is UNKNOWN, not a crash
                out.error = traceback.format_exc()
                first = (str(exc).strip().splitlines() or [""])[0]
                out.summary = f"{type(exc).__name__}: {first}"[:300]
            out.seconds = time.perf_counter() - start
            outcomes.append(out)
    finally:
        if derived is None:
            d.release()
    return outcomes
