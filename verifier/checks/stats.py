"""Figures for the report that are not anomalies: counts per producer, throughput over
time, and the offsets of anomalous partitions (for the offset plots)."""

from __future__ import annotations

from pyspark.sql import functions as F

from verifier.checks.derive import Derived
from verifier.checks.model import READ_COMMITTED, READ_UNCOMMITTED
from verifier.checks.runner import BUCKET_MS

PLOT_POINTS = 1500  # per partition plot: enough to see the shape, small in verdict.json


def counts_by_pid(d: Derived) -> dict[str, dict[str, int]]:
    """Per producer: sent, acknowledged, indeterminate, failed, committed, observed."""
    i = d.ident.where(F.col("sent"))
    seen = {iso: F.coalesce(F.col(f"copies_{iso}"), F.lit(0)) > 0
            for iso in (READ_COMMITTED, READ_UNCOMMITTED)}  # fmt: skip
    n = lambda c: F.sum(c.cast("int"))  # noqa: E731
    rows = (
        i.groupBy("pid")
        .agg(
            F.count(F.lit(1)).alias("sent"),
            n(F.col("ok")).alias("acknowledged"),
            n(~F.col("ok") & F.col("info")).alias("indeterminate"),
            n(~F.col("ok") & ~F.col("info")).alias("failed"),
            n(F.col("transactional") & F.col("must_see")).alias("committed"),
            n(seen[READ_COMMITTED]).alias("observed_read_committed"),
            n(seen[READ_UNCOMMITTED]).alias("observed_read_uncommitted"),
            n(seen[READ_COMMITTED] | seen[READ_UNCOMMITTED]).alias("observed"),
        )
        .collect()
    )
    return {r["pid"]: {k: int(v or 0) for k, v in r.asDict().items() if k != "pid"} for r in rows}


def throughput(d: Derived) -> dict[str, list[tuple[int, int]]]:
    """Acknowledged sends per second per producer (from the histories' ok lines)."""
    ev = d.run.events.where((F.col("f") == "send") & (F.col("type") == "ok"))
    b = (F.floor(F.col("t") / BUCKET_MS) * BUCKET_MS).cast("long").alias("b")
    out: dict[str, list[tuple[int, int]]] = {}
    for r in ev.groupBy("pid", b).count().collect():
        out.setdefault(r["pid"], []).append((r["b"], r["count"]))
    return {k: sorted(v) for k, v in out.items()}


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
