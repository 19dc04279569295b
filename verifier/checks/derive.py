"""Frames every check shares, derived once per run and cached.

``cells``   one row per (topic, partition, offset) any reader saw: how often each
            (reader, isolation) delivered it and which record it held (min and max of the
            decoded identity, so readers that disagree show as min != max).
``ids``     one row per observed identity (pid, p, seq): per isolation level the number
            of distinct offsets holding it, its first copy, its sessions; per
            (reader, isolation) whether it was seen.
``txns``    one row per (pid, ses, txn) with its outcome, from the history plus, for a
            commit of unknown outcome, whether a read_committed reader saw it.
``ident``   the producers' sends (one row per identity: outcome, must be visible?) joined
            with ``ids``: the input of the lost/unseen and not-in-history checks.

Every check works from these on (topic, partition) and identities, never on contiguous
offsets, so transaction markers and aborted records (which take offsets) are no gaps.
"""

from __future__ import annotations

from functools import cached_property

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from verifier.checks.model import ISOLATIONS, READ_COMMITTED, RunData

#: the decoded identity as one comparable value; ts is part of it because a re-send
#: carries a new send time: two readers seeing different ts at one offset saw two records
IDENT_FIELDS = ("pid", "p", "seq", "ses", "txn", "ts_send")


def combo_col(reader: str, isolation: str) -> str:
    """Column name of the delivery count of one (reader, isolation) pair."""
    return "n_" + (reader + "_" + isolation).replace("-", "_").replace(".", "_")


def foreign_expr(run: RunData) -> Column:
    """True for a row that does not decode, belongs to another run or to no producer."""
    pids = list(run.config.producers)
    return (
        F.coalesce(F.col("foreign"), F.lit(False))
        | F.col("run").isNull() | (F.col("run") != F.lit(run.config.run))
        | F.col("pid").isNull() | ~F.col("pid").isin(pids)
    )  # fmt: skip


class Derived:
    """Lazily built, cached shared frames of one run. Call :meth:`release` when done."""

    def __init__(self, run: RunData):
        self.run = run
        self._cached: list[DataFrame] = []

    def _keep(self, df: DataFrame) -> DataFrame:
        self._cached.append(df.persist())
        return df

    def release(self) -> None:
        for df in self._cached:
            df.unpersist()
        self._cached.clear()

    def combos_at(self, isolation: str) -> list[str]:
        return [combo_col(r, i) for r, i in self.run.combos if i == isolation]

    def present_at(self, isolation: str) -> Column:
        """True when some reader saw this cell at ``isolation``."""
        cols = self.combos_at(isolation)
        if not cols:
            return F.lit(False)
        return F.greatest(*[F.col(c) for c in cols], F.lit(0)) > 0

    @cached_property
    def cells(self) -> DataFrame:
        obs = self.run.observations
        decoded = F.when(~foreign_expr(self.run), F.struct(*[F.col(c) for c in IDENT_FIELDS]))
        counts = [
            F.sum(F.when((F.col("reader") == r) & (F.col("isolation") == i), 1).otherwise(0))
            .alias(combo_col(r, i)) for r, i in self.run.combos
        ]  # fmt: skip
        return self._keep(obs.groupBy("topic", "partition", "offset").agg(
            *counts, F.min(decoded).alias("id_min"), F.max(decoded).alias("id_max"),
            F.max(foreign_expr(self.run).cast("int")).alias("foreign_any"),
        ))  # fmt: skip

    @cached_property
    def ids(self) -> DataFrame:
        cells = self.cells.where(F.col("id_min").isNotNull()).select(
            "topic", "partition", "offset", "id_min.*",
            *[combo_col(r, i) for r, i in self.run.combos],
        )  # fmt: skip
        aggs = [F.first("topic").alias("topic"), F.min("ts_send").alias("t")]
        for iso in ISOLATIONS:
            here = self.present_at(iso)
            aggs += [
                F.sum(here.cast("int")).alias(f"copies_{iso}"),
                F.min(F.when(here, F.struct("offset", "ses", "partition"))).alias(f"first_{iso}"),
                F.max(F.when(here, F.col("offset"))).alias(f"last_{iso}"),
                F.size(F.collect_set(F.when(here, F.col("ses")))).alias(f"sessions_{iso}"),
            ]
        aggs += [F.max(F.col(combo_col(r, i)) > 0).alias("seen_" + combo_col(r, i))
                 for r, i in self.run.combos]  # fmt: skip
        return self._keep(cells.groupBy("pid", "p", "seq").agg(*aggs))

    @cached_property
    def txns(self) -> DataFrame:
        ev = self.run.events.where(F.col("txn").isNotNull())

        def is_(f: str, t: str | None = None):
            return (F.col("f") == f) & (F.lit(True) if t is None else F.col("type") == t)

        t = ev.groupBy("pid", "ses", "txn").agg(
            F.max(is_("commit", "ok")).alias("commit_ok"),
            F.max(is_("commit", "fail")).alias("commit_fail"),
            F.max(is_("commit")).alias("commit_invoked"),
            F.max(is_("abort")).alias("abort_invoked"),
            F.max(F.when(is_("begin"), F.col("abort"))).alias("abort_intent"),
        )
        rc_txn = self.present_at(READ_COMMITTED) & F.col("id_min.txn").isNotNull()
        seen_rc = (self.cells.where(rc_txn)
                   .select(F.col("id_min.pid").alias("pid"), F.col("id_min.ses").alias("ses"),
                           F.col("id_min.txn").alias("txn")).distinct()
                   .withColumn("seen_committed", F.lit(True)))  # fmt: skip
        t = t.join(seen_rc, ["pid", "ses", "txn"], "left")
        # formats §2: committed = commit ok, or commit info and a read_committed reader saw it
        status = (F.when(F.col("commit_ok"), "committed")
                  .when(F.col("commit_fail") | F.col("abort_invoked"), "aborted")
                  .when(F.col("commit_invoked") & F.col("seen_committed"), "committed")
                  .when(F.col("commit_invoked"), "commit-unknown")
                  .otherwise("open"))  # fmt: skip
        return self._keep(t.withColumn("status", status).drop("seen_committed"))

    @cached_property
    def sends(self) -> DataFrame:
        """One row per identity the producers sent: outcome and whether it must be visible."""
        ev = self.run.events.where(F.col("f") == "send")
        attempts = ev.groupBy("pid", "ses", "txn", "p", "seq").agg(
            F.sum((F.col("type") == "invoke").cast("int")).alias("invokes"),
            F.sum((F.col("type") != "invoke").cast("int")).alias("done"),
            F.max(F.col("type") == "ok").alias("ok"),
            F.max(F.col("type") == "info").alias("info"),
            F.min("t").alias("t"),
        )
        # a send without completion line (the process died) is info (formats §2)
        attempts = attempts.withColumn("info", F.col("info") | (F.col("invokes") > F.col("done")))
        committed = self.txns.where(F.col("status") == "committed").select(
            "pid", "ses", "txn", F.lit(True).alias("in_committed")
        )
        attempts = attempts.join(committed, ["pid", "ses", "txn"], "left")
        # a record in a committed txn was appended unless its send definitely failed
        visible = F.when(F.col("txn").isNull(), F.col("ok")).otherwise(
            F.coalesce(F.col("in_committed"), F.lit(False)) & (F.col("ok") | F.col("info"))
        )
        return attempts.groupBy("pid", "p", "seq").agg(
            F.max("ok").alias("ok"), F.max("info").alias("info"),
            F.max(visible).alias("must_see"), F.min("t").alias("t_send"),
            F.max(F.col("txn").isNotNull()).alias("transactional"),
        )  # fmt: skip

    @cached_property
    def ident(self) -> DataFrame:
        topics = F.create_map(*[x for p in self.run.config.producers.values()
                                for x in (F.lit(p.pid), F.lit(p.topic))])  # fmt: skip
        sends = self.sends.withColumn("sent", F.lit(True))
        joined = sends.join(self.ids, ["pid", "p", "seq"], "full_outer")
        return self._keep(
            joined.withColumn(
                "topic", F.coalesce(F.col("topic"), F.try_element_at(topics, F.col("pid")))
            )
        )
