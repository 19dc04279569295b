"""The live checks as the run goes: the progress line judges the observer's counts by the
expectation table, --fail-fast sees only forbidden ones; the soak's repeated faults."""

from __future__ import annotations

import pytest

from verifier.orchestration.live import forbidden_so_far, live_line
from verifier.orchestration.scenario import load_scenario, parse_duration, stretched
from verifier.rundata.errors import UsageError
from verifier.rundata.formats import header, write_json_atomic
from verifier.rundata.layout import layout
from verifier.rundata.plan import PlannedProducer

PLANS = [PlannedProducer("alo-0", "at-least-once", "at-least-once", "t.alo"),
         PlannedProducer("idem-0", "idempotent", "idempotent", "t.idem"),
         PlannedProducer("tx-0", "transactional", "transactional", "t.tx")]  # fmt: skip


def summary(run_dir, iso: str, anomalies: dict) -> None:
    write_json_atomic(layout(run_dir).anomalies_of(iso) / "summary.json",
                      {**header("live-summary"), "isolation": iso, "batch": 3, "rows": 10,
                       "records": {}, "anomalies": anomalies, "ranges": 1})  # fmt: skip


def test_tolerated_and_expected_counts_are_named_with_their_entry(tmp_path):
    summary(tmp_path, "read_committed", {"alo-0": {"duplicate-same-session": 156}})
    summary(tmp_path, "read_uncommitted", {"alo-0": {"duplicate-same-session": 156},
                                           "tx-0": {"aborted-read": 40}})
    line = live_line(tmp_path, PLANS, "exactly-once")
    assert line == ("at-least-once: 0 forbidden so far; 312 dup (tolerated); "
                    "idempotent: 0 forbidden so far; transactional@rc: 0 forbidden so far; "
                    "transactional@ru: 0 forbidden so far; 40 aborted (expected)")
    assert forbidden_so_far(tmp_path, PLANS, "exactly-once") == []


def test_a_forbidden_count_is_what_fail_fast_stops_at(tmp_path):
    summary(tmp_path, "read_committed", {"idem-0": {"reorder": 2},
                                         "tx-0": {"aborted-read": 1}})
    found = forbidden_so_far(tmp_path, PLANS, "exactly-once")
    assert found == ["idempotent: 2 FORBIDDEN (2 reorder)",
                     "transactional@rc: 1 FORBIDDEN (1 aborted)"]


def test_delivery_duplicates_follow_the_sink_and_undecodable_rows_their_topic(tmp_path):
    summary(tmp_path, "read_committed", {"topic:t.alo": {"duplicate-delivery": 3}})
    assert forbidden_so_far(tmp_path, PLANS, "at-least-once") == []
    assert forbidden_so_far(tmp_path, PLANS, "exactly-once") == [
        "at-least-once: 3 FORBIDDEN (3 delivery dup)"]


def test_before_the_first_batch_nothing_is_claimed(tmp_path):
    """While Spark starts (no query's checkpoint metadata yet) the line says so; once a
    query runs, that no batch has been judged yet."""
    from verifier.rundata.layout import RunLayout

    assert live_line(tmp_path, PLANS, "exactly-once") == (
        "live checks: observer starting (Spark), it reads from the first offset")
    assert forbidden_so_far(tmp_path, PLANS, "exactly-once") == []
    checkpoint = RunLayout(tmp_path).checkpoint("read_uncommitted")
    checkpoint.mkdir(parents=True)
    (checkpoint / "metadata").write_text('{"id":"q"}')
    assert live_line(tmp_path, PLANS, "exactly-once") == "live checks: no batch yet"
    assert forbidden_so_far(tmp_path, PLANS, "exactly-once") == []


def test_durations():
    assert parse_duration("30m") == 1800 and parse_duration("90s") == 90
    assert parse_duration("1h") == 3600 and parse_duration(45) == 45
    for bad in ("soon", "-3m", "0"):
        with pytest.raises(UsageError):
            parse_duration(bad)


def test_a_soak_repeats_the_scenario_faults_each_period_on_the_seeded_schedule():
    base = load_scenario("combined")
    soak = stretched(base, 125)
    period = base.workload.duration_s
    assert soak.workload.duration_s == 125 and len(soak.faults) == 4 * len(base.faults)
    assert [f["kind"] for f in soak.faults] == [f["kind"] for f in base.faults] * 4
    assert soak.faults[len(base.faults)]["start"] == base.faults[0]["start"] + period
    starts = [f["start"] for f in soak.faults]
    assert max(s if not isinstance(s, list) else s[1] for s in starts) < 125


def test_the_run_says_whether_live_and_batch_agreed():
    from verifier.orchestration.chaos import live_vs_batch_line

    same = {"compared": True, "agree": True, "live": 7, "batch": 7, "seconds": 0.81}
    assert live_vs_batch_line(same) == (
        "batch cross-check agrees: 7 anomalies, the same as the live checks (0.8 s to compare)")
    # a chaos run's verdict came from the live path: the verdicts are compared too
    assert live_vs_batch_line(same, {"seconds": 41.2, "differ": []}) == (
        "batch cross-check (41 s) agrees: 7 anomalies, the same as the live checks, the same "
        "verdicts (0.8 s to compare)")
    other = {"seconds": 41.2, "differ": [{"column": "idempotent", "live": "PASS",
                                          "batch": "FAIL"}]}
    assert "verdicts DIFFER, UNKNOWN there: idempotent live PASS batch FAIL" in (
        live_vs_batch_line(same, other))
    line = live_vs_batch_line({"compared": True, "agree": False, "n_differ": 1,
                               "modes": ["idempotent"], "differ": [
                                   {"side": "live only", "kind": "reorder", "topic": "t",
                                    "partition": 0, "offset": 5}]})
    assert "the live checks DISAGREE" in line and "live only reorder t-0@5" in line
    assert "not compared" in live_vs_batch_line(None)


def test_a_longer_period_spaces_the_repeated_faults():
    base = load_scenario("combined")
    soak = stretched(base, 300, period=90)
    assert len(soak.faults) == 3 * len(base.faults)
    assert soak.faults[len(base.faults)]["start"] == base.faults[0]["start"] + 90
    assert stretched(base, 300, period=5).faults == stretched(base, 300).faults
