"""Figures for the report that are not anomalies: counts per producer, throughput over
time, and the offsets of anomalous partitions (for the offset plots)."""

from __future__ import annotations

from pyspark.sql import functions as F

from verifier.judge.checks.derive import Derived
from verifier.judge.checks.history import throughput as history_throughput
from verifier.judge.checks.runner import BUCKET_MS
from verifier.judge.model import READ_COMMITTED, READ_UNCOMMITTED

PLOT_POINTS = 1500  # per partition plot: enough to see the shape, small in verdict.json


COUNT_NAMES = ("sent", "acknowledged", "indeterminate", "failed", "committed",
               "observed_read_committed", "observed_read_uncommitted", "observed")  # fmt: skip


def counts_by_pid(d: Derived) -> dict[str, dict[str, int]]:
    """Per producer: sent, acknowledged, indeterminate, failed, committed, observed
    (the pass counts per partition, rec 'c'; summed here)."""
    c = d.result.where(F.col("rec") == "c")
    rows = c.groupBy("pid").agg(
        *[F.sum(F.col("n")[k]).alias(name) for k, name in enumerate(COUNT_NAMES)]
    ).collect()
    return {r["pid"]: {k: int(v or 0) for k, v in r.asDict().items() if k != "pid"} for r in rows}


def throughput(d: Derived) -> dict[str, list[tuple[int, int]]]:
    """Acknowledged sends per second per producer (from the histories' ok lines)."""
    return history_throughput(d.history, BUCKET_MS)


def partition_points(d: Derived, topic: str, partition: int, around: list[int]) -> list[list]:
    """Cells of one partition near the anomalous offsets: [offset, pid, seq, ses, txn,
    seen at read_committed, seen at read_uncommitted], at most PLOT_POINTS of them."""
    lo, hi = min(around), max(around)
    pad = max(50, (PLOT_POINTS - (hi - lo)) // 2)
    c = d.cells.where((F.col("topic") == topic) & (F.col("partition") == partition)
                      & F.col("offset").between(lo - pad, hi + pad))  # fmt: skip
    rows = (c.select("offset", "id_min.pid", "id_min.seq", "id_min.ses", "id_min.txn",
                     d.present_at(READ_COMMITTED).alias("rc"),
                     d.present_at(READ_UNCOMMITTED).alias("ru"))
            .orderBy("offset").limit(PLOT_POINTS).collect())  # fmt: skip
    return [list(r) for r in rows]
