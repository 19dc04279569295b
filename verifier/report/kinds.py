"""Which anomaly kinds a run's table (terminal, HTML) shows."""

from __future__ import annotations

from verifier.rundata.vocab import ARCHIVED, KINDS

#: a kind a column's verdict.json lacks (written before the kind existed)
ABSENT = {"count": 0, "expectation": "n/a", "sample": [], "timeline": []}


def table_kinds(cols: list[dict]) -> list[str]:
    """Every kind, but ``archived`` (a share group's, KIP-932) only where a column can
    have it."""
    return [k for k in KINDS if k != ARCHIVED or any(
        c["anomalies"].get(k, ABSENT)["expectation"] != "n/a" for c in cols)]


__all__ = ["ABSENT", "table_kinds"]
