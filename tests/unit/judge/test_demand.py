"""A column held to the guarantee a user demands (verifier.judge.demand)."""

from __future__ import annotations

import pytest

from verifier.judge.demand import judge_as
from verifier.judge.model import KINDS


def column(expect: str, verdict: str = "PASS", **counts) -> dict:
    return {"name": "user:app.properties", "expect": expect, "verdict": verdict,
            "isolations": ["read_committed", "read_uncommitted"],
            "anomalies": {k: {"count": counts.get(k.replace("-", "_"), 0), "sample": []}
                          for k in KINDS}}


def test_at_least_once_duplicates_fail_an_idempotent_demand():
    col = column("at-least-once", duplicate_same_session=12, reorder=3)
    judged = judge_as(col, "idempotent")
    assert judged["verdict"] == "FAIL"
    assert judged["forbidden"] == ["duplicate-same-session", "reorder"]
    assert judged["claimed"] == "at-least-once" and judged["demanded"] == "idempotent"
    assert judged["anomalies"]["duplicate-same-session"]["expectation"] == "forbidden"


def test_the_same_column_passes_as_what_it_claims():
    col = column("at-least-once", duplicate_same_session=12, reorder=3)
    assert judge_as(col, "at-least-once")["verdict"] == "PASS"


def test_a_weaker_demand_passes_a_column_its_claim_failed():
    col = column("idempotent", verdict="FAIL", duplicate_cross_session=2)
    assert judge_as(col, "at-least-once")["verdict"] == "PASS"


def test_an_undecided_run_stays_unknown_unless_something_forbidden_is_there():
    assert judge_as(column("idempotent", verdict="UNKNOWN"), "idempotent")["verdict"] == \
        "UNKNOWN"
    col = column("at-least-once", verdict="UNKNOWN", duplicate_same_session=1)
    assert judge_as(col, "idempotent")["verdict"] == "FAIL"


def test_losses_fail_every_demand_above_at_most_once():
    col = column("at-most-once", lost=5)
    assert judge_as(col, "at-most-once")["verdict"] == "PASS"
    for demanded in ("at-least-once", "idempotent", "transactional"):
        assert judge_as(col, demanded)["verdict"] == "FAIL", demanded


def test_an_unknown_guarantee_is_refused():
    with pytest.raises(ValueError, match="exactly-once-please"):
        judge_as(column("idempotent"), "exactly-once-please")
