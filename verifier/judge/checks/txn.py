"""Transaction checks: aborted reads, torn transactions, hanging transactions."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from verifier.judge.checks.derive import Derived
from verifier.judge.definitions.kinds import NOT_COMMITTED
from verifier.judge.model import ABORTED_READ, HANGING, TORN, anomaly_frame

__all__ = ["NOT_COMMITTED", "check_aborted_read", "check_hanging", "check_torn"]


def check_aborted_read(d: Derived) -> DataFrame:
    """A record of a transaction that did not commit, observed by a reader.

    Not committed = its session aborted it, its commit failed, or it never invoked commit
    (the session died; the next one's init_transactions aborts it). A commit of unknown
    outcome is committed if a read_committed reader saw it, so it is never reported.
    Reported at both levels: at read_uncommitted it is what the table expects.
    """
    return d.anomalies(ABORTED_READ)


def check_torn(d: Derived) -> DataFrame:
    """A committed transaction that a reader saw only part of (some, not all, records).

    Matched by session: a re-run of the transaction in a later session is a different
    attempt. Seeing none of it is reported as lost records, not as torn. The pass counts
    each transaction's visible records per partition (rec 'v'); they are summed here.
    """
    combos = d.run.combos
    v = d.result.where(F.col("rec") == "v")
    vis = v.groupBy("pid", "ses", "txn").agg(
        F.first("topic").alias("topic"),
        *[F.sum(F.col("n")[k]).alias(f"v{k}") for k in range(len(combos))],
    )
    txns = d.txn_sizes.join(vis, ["pid", "ses", "txn"])
    # one row per (transaction, reader, isolation): one plan instead of a union per reader
    per = F.explode(F.array(*[F.struct(F.lit(r).alias("r"), F.lit(i).alias("i"),
                                       F.col(f"v{k}").alias("n"))
                              for k, (r, i) in enumerate(combos)])).alias("x")  # fmt: skip
    txns = txns.select("*", per)
    n = F.col("x.n")
    return anomaly_frame(
        txns.where((n > 0) & (n < F.col("size"))), TORN,
        {"records": F.col("size"), "visible": n, "partitions": F.col("partitions")},
        topic=F.col("topic"), isolation=F.col("x.i"), reader=F.col("x.r"), pid=F.col("pid"),
        ses=F.col("ses"), txn=F.col("txn"), t=F.col("t"),
    )  # fmt: skip


def check_hanging(d: Derived) -> DataFrame:
    """At drain, a partition's read_committed end offset (LSO) below its high watermark:
    an open transaction holds back every later record at read_committed."""
    p = d.run.drain_partitions
    rc, ru = F.col("end_read_committed"), F.col("end_read_uncommitted")
    return anomaly_frame(
        p.where(rc < ru), HANGING,
        {"end_read_committed": rc, "end_read_uncommitted": ru},
        topic=F.col("topic"), partition=F.col("partition"), offset=rc, offsets=F.array(rc, ru),
    )  # fmt: skip
