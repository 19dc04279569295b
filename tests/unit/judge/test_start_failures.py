"""A generator that could not start makes only its own column UNKNOWN, with one line
(issue 13): RUN/generators-failed.json, written by the orchestrator, read offline by
`verifier analyze` (judged here without Spark: no check runs, only the verdict)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.unit.judge.builders import verdict_without_checks
from verifier.assess.exitcodes import of_verdicts
from verifier.report.terminal import render_terminal
from verifier.rundata.layout import RunLayout
from verifier.rundata.startfail import last_line, read_start_failures, record_start_failure
from verifier.rundata.vocab import EXIT_ANOMALY, EXIT_INCOMPLETE

CLEAN = Path(__file__).resolve().parents[2] / "data" / "runs" / "baseline"
SAID = ("java generator: usage error: the Java client rejected the producer settings: "
        "ConfigException: Invalid value -1 for configuration metadata.max.age.ms")


_judge = verdict_without_checks


def _run(tmp_path, *, keep_history: bool = False) -> Path:
    run = tmp_path / "run"
    shutil.copytree(CLEAN, run)
    where = RunLayout(run)
    if not keep_history:
        where.history("transactional-0").unlink()
    record_start_failure(where.start_failures, "transactional-0", 64,
                         last_line(f"starting\n{SAID}\n\n"))
    return run


def test_only_the_failed_generators_columns_are_unknown_with_its_line(tmp_path):
    doc = _judge(_run(tmp_path))
    verdicts = {c["name"]: c["verdict"] for c in doc["columns"]}
    assert verdicts == {"at-least-once": "PASS", "at-most-once": "PASS", "idempotent": "PASS",
                        "transactional@read_committed": "UNKNOWN",
                        "transactional@read_uncommitted": "UNKNOWN"}
    why = f"producer transactional-0 never started: exited 64 before producing: {SAID}"
    for c in doc["columns"]:
        assert c["reasons"] == ([why] if c["mode"] == "transactional" else [])
    assert doc["exit_code"] == EXIT_INCOMPLETE
    said = [line for line in render_terminal(doc).splitlines() if "UNKNOWN because" in line]
    assert said == ["transactional@read_committed, transactional@read_uncommitted: "
                    f"UNKNOWN because {why}"]


def test_the_marker_wins_over_a_session_line(tmp_path):
    """A generator that wrote its session line and then gave up before a completed send
    is no started producer either."""
    doc = _judge(_run(tmp_path, keep_history=True))
    unknown = {c["name"] for c in doc["columns"] if c["verdict"] == "UNKNOWN"}
    assert unknown == {"transactional@read_committed", "transactional@read_uncommitted"}


def test_another_columns_fail_still_exits_1():
    assert of_verdicts(["UNKNOWN", "FAIL", "PASS"]) == EXIT_ANOMALY


def test_marker_file_round_trip(tmp_path):
    path = RunLayout(tmp_path).start_failures
    assert read_start_failures(path) == {}
    record_start_failure(path, "a-0", 1, "boom")
    record_start_failure(path, "b-0", None, last_line(""))
    assert read_start_failures(path) == {"a-0": {"exit_code": 1, "line": "boom"},
                                         "b-0": {"exit_code": None,
                                                 "line": "(its log is empty)"}}
