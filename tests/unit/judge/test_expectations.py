"""The expectation table is DESIGN §6 as data; verdicts follow it. No Spark needed."""

from __future__ import annotations

import pytest

from verifier.assess.exitcodes import of_verdicts
from verifier.assess.outputs import combined
from verifier.judge import expectations as X
from verifier.judge import verdict as V
from verifier.judge.model import KINDS, CheckOutcome, Drain, Group, ProducerSpec, RunConfig, RunData


@pytest.mark.parametrize(("mode", "iso", "kind", "entry"), [
    ("at-most-once", X.RC, "lost", X.TOLERATED),
    ("at-most-once", X.RC, "duplicate-same-session", X.FORBIDDEN),
    ("at-least-once", X.RU, "duplicate-cross-session", X.TOLERATED),
    ("at-least-once", X.RC, "lost", X.FORBIDDEN),
    ("idempotent", X.RC, "duplicate-same-session", X.FORBIDDEN),
    ("idempotent", X.RC, "duplicate-cross-session", X.TOLERATED),
    ("idempotent", X.RC, "reorder", X.FORBIDDEN),
    ("transactional", X.RC, "aborted-read", X.FORBIDDEN),
    ("transactional", X.RU, "aborted-read", X.EXPECTED),
    ("transactional", X.RU, "duplicate-cross-session", X.EXPECTED),
    ("transactional", X.RU, "torn-transaction", X.TOLERATED),
    # an aborted attempt and its redo by the same producer: two copies of one session
    # at read_uncommitted, the committed one alone at read_committed (issue 50)
    ("transactional", X.RU, "duplicate-same-session", X.TOLERATED),
    ("transactional", X.RC, "duplicate-same-session", X.FORBIDDEN),
    ("idempotent", X.RC, "torn-transaction", X.NA),
    ("transactional", X.RU, "hanging-transaction", X.FORBIDDEN),
    ("at-least-once", X.RC, "unseen", X.INCONCLUSIVE),
    ("at-most-once", X.RC, "unseen", X.TOLERATED),
])  # fmt: skip
def test_table_entries_match_design(mode, iso, kind, entry):
    assert X.expectation(mode, iso, kind) == entry


def test_delivery_duplicates_depend_on_the_sink():
    assert X.expectation("idempotent", X.RC, "duplicate-delivery", "exactly-once") == X.FORBIDDEN
    assert X.expectation("idempotent", X.RC, "duplicate-delivery", "at-least-once") == X.TOLERATED


def test_every_mode_and_level_covers_every_kind():
    for mode in X.PRESETS:
        for iso in (X.RC, X.RU):
            assert {k: X.expectation(mode, iso, k) for k in KINDS}


def _run(mode="idempotent", expect=None, completed=True, started=True) -> RunData:
    spec = ProducerSpec("p1", mode, expect or mode, "t")
    return RunData(
        RunConfig("r", "s", "exactly-once", {"p1": spec}),
        None,
        None,
        [],
        Drain(completed),
        None,
        {"p1": started},
        [],
    )


def _outcome(kind, mode="idempotent", iso="read_committed", n=1, error=None):
    g = [Group(kind, mode, iso, n, [{"topic": "t", "partition": 0, "offset": 3}])] if n else []
    return CheckOutcome("c", (kind,), g, error, summary="Boom: x" if error else None)


def _code(doc: dict) -> int:
    return of_verdicts(c["verdict"] for c in doc["columns"])


def test_forbidden_anomaly_fails_tolerated_passes():
    doc = V.build(_run(), [_outcome("duplicate-same-session")], {})
    assert doc["columns"][0]["verdict"] == "FAIL" and _code(doc) == 1
    doc = V.build(_run(), [_outcome("duplicate-cross-session")], {})
    assert doc["columns"][0]["verdict"] == "PASS" and _code(doc) == 0


def test_crashed_check_incomplete_drain_and_unstarted_producer_are_unknown():
    crashed = V.build(_run(), [_outcome("lost", n=0, error="Traceback ...")], {})
    assert crashed["columns"][0]["verdict"] == "UNKNOWN" and _code(crashed) == 2
    assert "check c crashed: Boom: x" in crashed["columns"][0]["reasons"]
    assert V.build(_run(completed=False), [], {})["columns"][0]["verdict"] == "UNKNOWN"
    assert V.build(_run(started=False), [], {})["columns"][0]["verdict"] == "UNKNOWN"


def test_fail_outranks_unknown():
    doc = V.build(_run(completed=False), [_outcome("reorder")], {})
    assert doc["columns"][0]["verdict"] == "FAIL"


def test_transactional_gets_two_columns_and_user_config_follows_declared_mode():
    doc = V.build(
        _run("transactional"), [_outcome("aborted-read", "transactional", "read_uncommitted")], {}
    )
    cols = {c["name"]: c for c in doc["columns"]}
    assert set(cols) == {"transactional@read_committed", "transactional@read_uncommitted"}
    assert cols["transactional@read_uncommitted"]["anomalies"]["aborted-read"]["count"] == 1
    assert all(c["verdict"] == "PASS" for c in cols.values())
    user = V.build(
        _run("user:my.properties", "at-least-once"),
        [_outcome("duplicate-same-session", "user:my.properties")],
        {},
    )
    assert user["columns"][0]["name"] == "user:my.properties"
    assert user["columns"][0]["verdict"] == "PASS"  # at-least-once tolerates duplicates


def test_combine_grid_keeps_worst_verdict_per_scenario():
    a = V.build(_run(), [], {})
    b = {**V.build(_run(), [_outcome("reorder")], {}), "scenario": "s"}
    c = {**V.build(_run(), [], {}), "scenario": "other"}
    grid = combined([a, b, c])
    assert grid["grid"] == {"s": {"idempotent": "FAIL"}, "other": {"idempotent": "PASS"}}
    assert grid["exit_code"] == 1
