"""Lost and unseen: records that had to be visible and that a reader did not deliver."""

from __future__ import annotations

from pyspark.sql import DataFrame

from verifier.judge.checks.derive import Derived
from verifier.judge.model import LOST, UNSEEN


def check_lost(d: Derived) -> DataFrame:
    """An identity that must be visible (ok, or in a committed transaction) that some
    reader did not deliver at an isolation level, one row per (identity, isolation).

    ``info`` sends are never in the must-see set: they count as written only if a reader
    saw them. When the drain did not complete (for that partition) the row is ``unseen``
    (lost or late), not ``lost``. Evidence says whether another reader saw it, i.e.
    whether it was in the log but not delivered. Computed per partition by
    :func:`verifier.judge.definitions.kinds.lost`.
    """
    return d.anomalies(LOST, UNSEEN)
