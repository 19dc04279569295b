"""Transaction checks: aborted reads, torn transactions, hanging transactions."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from verifier.checks.derive import Derived, combo_col
from verifier.checks.model import ABORTED_READ, HANGING, TORN, anomaly_frame

#: outcomes under which a transaction's records must never be visible at read_committed
NOT_COMMITTED = ("aborted", "open")


def _txn_cells(d: Derived) -> DataFrame:
    """Observed cells of transactional records, with their transaction's outcome."""
    cells = d.cells.where(F.col("id_min.txn").isNotNull()).select("*", "id_min.*")
    outcome = d.txns.select("pid", "ses", "txn", "status", "abort_intent")
    return cells.join(outcome, ["pid", "ses", "txn"], "left")


def check_aborted_read(d: Derived) -> DataFrame:
    """A record of a transaction that did not commit, observed by a reader.

    Not committed = its session aborted it, its commit failed, or it never invoked commit
    (the session died; the next one's init_transactions aborts it). A commit of unknown
    outcome is committed if a read_committed reader saw it, so it is never reported.
    Reported at both levels: at read_uncommitted it is what the table expects.
    """
    cells = _txn_cells(d).where(F.coalesce(F.col("status"), F.lit("open")).isin(*NOT_COMMITTED))
    out = []
    for iso in sorted({iso for _, iso in d.run.combos}):
        readers = [(r, F.col(combo_col(r, i)) > 0) for r, i in d.run.combos if i == iso]
        who = F.concat_ws(",", *[F.when(s, F.lit(r)) for r, s in readers])
        any_ = reduce(lambda a, b: a | b, [s for _, s in readers])
        out.append(anomaly_frame(
            cells.where(any_), ABORTED_READ,
            {"txn_status": F.coalesce(F.col("status"), F.lit("open")),
             "abort_intent": F.col("abort_intent")},
            topic=F.col("topic"), partition=F.col("partition"), isolation=F.lit(iso), reader=who,
            pid=F.col("pid"), ses=F.col("ses"), seq=F.col("seq"), txn=F.col("txn"),
            offset=F.col("offset"), offsets=F.array(F.col("offset")), t=F.col("ts_send"),
        ))  # fmt: skip
    return reduce(DataFrame.unionByName, out)


def check_torn(d: Derived) -> DataFrame:
    """A committed transaction that a reader saw only part of (some, not all, records).

    Matched by session: a re-run of the transaction in a later session is a different
    attempt. Seeing none of it is reported as lost records, not as torn.
    """
    ev = d.run.events.where((F.col("f") == "send") & F.col("txn").isNotNull())
    attempt = ev.groupBy("pid", "ses", "txn", "p", "seq").agg(
        F.max(F.col("type") == "fail").alias("failed"), F.min("t").alias("t")
    )
    size = (attempt.where(~F.col("failed")).groupBy("pid", "ses", "txn")
            .agg(F.count(F.lit(1)).alias("size"), F.min("t").alias("t"),
                 F.sort_array(F.collect_set("p")).alias("partitions")))  # fmt: skip
    committed = d.txns.where(F.col("status") == "committed").select("pid", "ses", "txn")
    cells = d.cells.where(F.col("id_min.txn").isNotNull()).select("*", "id_min.*")
    vis = cells.groupBy("pid", "ses", "txn").agg(
        F.first("topic").alias("topic"),
        *[F.count_distinct(F.when(F.col(combo_col(r, i)) > 0, F.struct("p", "seq")))
          .alias(combo_col(r, i)) for r, i in d.run.combos])  # fmt: skip
    txns = committed.join(size, ["pid", "ses", "txn"]).join(vis, ["pid", "ses", "txn"])
    out = []
    for r, i in d.run.combos:
        n = F.col(combo_col(r, i))
        out.append(anomaly_frame(
            txns.where((n > 0) & (n < F.col("size"))), TORN,
            {"records": F.col("size"), "visible": n, "partitions": F.col("partitions")},
            topic=F.col("topic"), isolation=F.lit(i), reader=F.lit(r), pid=F.col("pid"),
            ses=F.col("ses"), txn=F.col("txn"), t=F.col("t"),
        ))  # fmt: skip
    return reduce(DataFrame.unionByName, out)


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
