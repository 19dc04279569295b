"""Checks on what the log holds: duplicates, reorder, readers that disagree, foreign records.

Each takes the shared :class:`~verifier.judge.checks.derive.Derived` data of one run and
returns anomaly rows (:data:`~verifier.judge.model.ANOMALY_COLUMNS`). Pure: no Kafka, no
clock, nothing kept between calls. The per-partition logic is in
:mod:`verifier.judge.definitions.kinds` (one function per check); these select its rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from verifier.judge.checks.derive import Derived, foreign_expr
from verifier.judge.model import (
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    INCONSISTENT,
    REORDER,
    anomaly_frame,
)  # fmt: skip


def check_duplicates_log(d: Derived) -> DataFrame:
    """One identity at two or more offsets of the log, per isolation level.

    Same-session: some session wrote it twice (copies > sessions). Cross-session: copies
    come from two or more sessions (a restarted producer re-sent it). One identity can be
    both.
    """
    return d.anomalies(DUP_SAME, DUP_CROSS)


def check_duplicates_delivery(d: Derived) -> DataFrame:
    """The same (partition, offset) delivered more than once to one reader at one level."""
    return d.anomalies(DUP_DELIVERY)


def check_inconsistent_offsets(d: Derived) -> DataFrame:
    """Two readers (or isolation levels) saw different records at one (partition, offset),
    or one decoded it and another did not."""
    return d.anomalies(INCONSISTENT)


def check_foreign(d: Derived) -> DataFrame:
    """Rows that do not decode, belong to another run or producer, or to no history."""
    obs = d.run.observations
    # no shuffle: a filter on the scan
    undecoded = anomaly_frame(
        obs.where(foreign_expr(d.run)), FOREIGN,
        {"error": F.coalesce(F.col("error"), F.lit("run or producer unknown to this run")),
         "run": F.col("run")},
        topic=F.col("topic"), partition=F.col("partition"), isolation=F.col("isolation"),
        reader=F.col("reader"), pid=F.col("pid"), seq=F.col("seq"), offset=F.col("offset"),
        offsets=F.array(F.col("offset")), t=F.col("ts_broker"),
    )  # fmt: skip
    # decodes, names a producer of this run, but no history line ever sent this identity
    return undecoded.unionByName(d.anomalies(FOREIGN))


def check_reorder(d: Derived) -> DataFrame:
    """Within one producer session and partition, a lower sequence at a higher offset.

    Uses each identity's first copy at each isolation level (later copies are
    duplicates, reported as such) and compares it with the highest sequence at any
    lower offset. Scoped to the session that wrote the first copy: a restarted producer
    re-sending what was never written is a re-send, not a reorder.
    """
    return d.anomalies(REORDER)
