"""Checks on what the log holds: duplicates, reorder, readers that disagree, foreign records.

Each takes the shared :class:`~verifier.checks.derive.Derived` frames of one run and
returns anomaly rows (:data:`~verifier.checks.model.ANOMALY_COLUMNS`). Pure: no Kafka, no
clock, nothing kept between calls.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from verifier.checks.derive import Derived, combo_col, foreign_expr
from verifier.checks.model import (
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    INCONSISTENT,
    ISOLATIONS,
    REORDER,
    anomaly_frame,
)  # fmt: skip


def _union(frames: list[DataFrame]) -> DataFrame:
    return reduce(DataFrame.unionByName, frames)


def check_duplicates_log(d: Derived) -> DataFrame:
    """One identity at two or more offsets of the log, per isolation level.

    Same-session: some session wrote it twice (copies > sessions). Cross-session: copies
    come from two or more sessions (a restarted producer re-sent it). One identity can be
    both.
    """
    out = []
    for iso in ISOLATIONS:
        copies, sessions = F.col(f"copies_{iso}"), F.col(f"sessions_{iso}")
        dup = d.ids.where(copies >= 2)
        for kind, cond in ((DUP_SAME, copies > sessions), (DUP_CROSS, sessions >= 2)):
            out.append(anomaly_frame(
                dup.where(cond), kind,
                {"copies": copies, "sessions": sessions,
                 "first_offset": F.col(f"first_{iso}.offset"), "last_offset": F.col(f"last_{iso}")},
                topic=F.col("topic"), partition=F.col(f"first_{iso}.partition"),
                isolation=F.lit(iso), pid=F.col("pid"), ses=F.col(f"first_{iso}.ses"),
                seq=F.col("seq"), offset=F.col(f"first_{iso}.offset"),
                offsets=F.array(F.col(f"first_{iso}.offset"), F.col(f"last_{iso}")), t=F.col("t"),
            ))  # fmt: skip
    return _union(out)


def check_duplicates_delivery(d: Derived) -> DataFrame:
    """The same (partition, offset) delivered more than once to one reader at one level."""
    out = []
    for reader, iso in d.run.combos:
        n = F.col(combo_col(reader, iso))
        out.append(anomaly_frame(
            d.cells.where(n > 1), DUP_DELIVERY, {"deliveries": n},
            topic=F.col("topic"), partition=F.col("partition"), isolation=F.lit(iso),
            reader=F.lit(reader), pid=F.col("id_min.pid"), ses=F.col("id_min.ses"),
            seq=F.col("id_min.seq"), txn=F.col("id_min.txn"), offset=F.col("offset"),
            offsets=F.array(F.col("offset")), t=F.col("id_min.ts_send"),
        ))  # fmt: skip
    return _union(out)


def check_inconsistent_offsets(d: Derived) -> DataFrame:
    """Two readers (or isolation levels) saw different records at one (partition, offset)."""
    c = d.cells
    differ = (c.id_min != c.id_max) | ((c.foreign_any == 1) & c.id_min.isNotNull())
    return anomaly_frame(
        c.where(differ), INCONSISTENT,
        {"one": F.col("id_min"), "other": F.col("id_max"), "foreign_seen": c.foreign_any == 1},
        topic=F.col("topic"), partition=F.col("partition"), pid=F.col("id_min.pid"),
        seq=F.col("id_min.seq"), offset=F.col("offset"), offsets=F.array(F.col("offset")),
        t=F.col("id_min.ts_send"),
    )  # fmt: skip


def check_foreign(d: Derived) -> DataFrame:
    """Rows that do not decode, belong to another run or producer, or to no history."""
    obs = d.run.observations
    undecoded = anomaly_frame(
        obs.where(foreign_expr(d.run)), FOREIGN,
        {"error": F.coalesce(F.col("error"), F.lit("run or producer unknown to this run")),
         "run": F.col("run")},
        topic=F.col("topic"), partition=F.col("partition"), isolation=F.col("isolation"),
        reader=F.col("reader"), pid=F.col("pid"), seq=F.col("seq"), offset=F.col("offset"),
        offsets=F.array(F.col("offset")), t=F.col("ts_broker"),
    )  # fmt: skip
    i = d.ident
    # decodes, names a producer of this run, but no history line ever sent this identity
    unsent = anomaly_frame(
        i.where(F.col("sent").isNull()), FOREIGN,
        {"error": F.lit("identity in no producer history")},
        topic=F.col("topic"), partition=F.col("p"), pid=F.col("pid"), seq=F.col("seq"),
        offset=F.coalesce(F.col("first_read_uncommitted.offset"),
                          F.col("first_read_committed.offset")), t=F.col("t"),
    )  # fmt: skip
    return undecoded.unionByName(unsent)


def check_reorder(d: Derived) -> DataFrame:
    """Within one producer session and partition, a lower sequence at a higher offset.

    Uses each identity's first copy at each isolation level (later copies are
    duplicates, reported as such) and compares it with the highest sequence at any
    lower offset. Scoped to the session that wrote the first copy: a restarted producer
    re-sending what was never written is a re-send, not a reorder.
    """
    out = []
    for iso in ISOLATIONS:
        first = F.col(f"first_{iso}")
        rows = d.ids.where(first.isNotNull()).select(
            "topic",
            "pid",
            "seq",
            "t",
            first.partition.alias("partition"),
            first.offset.alias("offset"),
            first.ses.alias("ses"),
        )
        w = (Window.partitionBy("topic", "partition", "pid", "ses").orderBy("offset")
             .rowsBetween(Window.unboundedPreceding, -1))  # fmt: skip
        rows = rows.withColumn("before", F.max(F.struct("seq", "offset")).over(w))
        out.append(anomaly_frame(
            rows.where(F.col("seq") < F.col("before.seq")), REORDER,
            {"higher_seq": F.col("before.seq"), "higher_seq_offset": F.col("before.offset")},
            topic=F.col("topic"), partition=F.col("partition"), isolation=F.lit(iso),
            pid=F.col("pid"), ses=F.col("ses"), seq=F.col("seq"), offset=F.col("offset"),
            offsets=F.array(F.col("before.offset"), F.col("offset")), t=F.col("t"),
        ))  # fmt: skip
    return _union(out)
