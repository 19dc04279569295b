"""The judge on real runs: one small recorded run of every scenario (tests/data/runs,
recorded by tests/data/record_runs.py on the local 3-node cluster, where every mode kept
its promise). Re-judging each is tests/integration/judge/test_selftest_runs.py (its own
analysis of the run as recorded, before its copies); here, that every scenario has one."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs"
SCENARIOS = sorted(p.name for p in RUNS.iterdir() if (p / "config.json").is_file())


#: scenarios with no recorded run, and why
NOT_RECORDED = {
    "executor-loss": "its faults act on a standalone Spark cluster's executors "
                     "(--spark-cluster standalone), which the fixtures profile does not start",
    "retention-loss": "failOnDataLoss=true stops its pipeline's query by design (UNKNOWN): "
                      "no run of it keeps every promise",
    "kafka-20685": "KAFKA-20685 (issue 50): it kills a Kafka Streams application's instance "
                   "(refused without --app); not yet a known-bugs row: its forced runs are "
                   "in progress (docs/known-bugs.md)",
    "instance-kill": "it kills an application's instances (refused without --app); its "
                     "runs are the chaos test tests/chaos/test_apps_instance_kill.py",
    "instance-pause": "it pauses an application's instance (refused without --app); its "
                      "runs are in docs/applications.md, its chaos test "
                      "tests/chaos/test_apps_group_faults.py",
    "group-coordinator-kill": "it kills the broker coordinating the applications' groups "
                              "(refused without --app); its runs are in "
                              "docs/applications.md, its chaos test "
                              "tests/chaos/test_apps_group_faults.py",
    "scale-out-in": "it adds and removes application instances (refused without --app); "
                    "its run is in docs/applications.md, its chaos test "
                    "tests/chaos/test_apps_group_faults.py",
    "offset-commit-loss": "it loses the answers to the applications' offset commits "
                          "(without --app it acts on nothing); its run is in "
                          "docs/applications.md, its chaos test "
                          "tests/chaos/test_apps_group_faults.py",
    "error-answer-refused": "run end to end by its chaos test "
                            "tests/chaos/test_error_answers.py (2026-11-29: every cell "
                            "PASS, docs/faults.md); not recorded under tests/data/runs yet",
    "error-answer-replaced": "run end to end by its chaos test "
                             "tests/chaos/test_error_answers.py (2026-11-29: every cell "
                             "PASS, docs/faults.md); not recorded under tests/data/runs yet",
}


def test_every_scenario_has_a_recorded_run():
    """Every scenario but the known bugs' (they force a documented bug and fail on the
    affected versions, so no recorded run of theirs keeps every promise) and those of
    :data:`NOT_RECORDED`."""
    from verifier.orchestration.known_bugs import load_known_bugs

    scenario_files = Path(__file__).resolve().parents[3] / "verifier" / "orchestration" / \
        "scenarios"
    names = {p.stem for p in scenario_files.glob("[!_]*.toml")}
    known = load_known_bugs()
    bugs = {b.scenario for b in known}
    # a combination's own schedule (kafka-14402-tv2) is a known bug's scenario too
    bugs |= {c.scenario for b in known for c in b.combinations if c.scenario}
    assert bugs and bugs <= names, "the known bugs' table names no scenario"
    assert set(NOT_RECORDED) <= names, "a scenario listed as not recorded is gone"
    assert set(SCENARIOS) == names - bugs - set(NOT_RECORDED)
