"""The per-shuffle-partition pass on edge input (no Spark needed)."""

from __future__ import annotations

from verifier.judge.checks.derive import _groups


def test_an_empty_shuffle_partition_yields_nothing():
    """Spark hands an empty partition no Arrow batch at all (a quick baseline run with
    fewer (topic, partition)s than shuffle partitions crashed on it: UNKNOWN verdicts)."""
    assert list(_groups(iter([]), ctx=None, sends_schema=None)) == []
