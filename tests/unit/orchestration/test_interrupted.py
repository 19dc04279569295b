"""A run folder a signal stopped says so, and `verifier analyze` does not call it complete
(issue 17): RUN/INTERRUPTED (written by `verifier chaos` on SIGTERM, SIGINT, SIGHUP;
the integration side is tests/integration/orchestration/test_process_lifetime.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verifier.assess import exitcodes as X
from verifier.assess.facts import interrupted
from verifier.assess.finish import mark_interrupted
from verifier.cli import EXIT_INCOMPLETE, main
from verifier.orchestration.phases import PhaseClock
from verifier.rundata.layout import RunLayout

RECORDED = Path(__file__).resolve().parents[2] / "data" / "runs" / "baseline"
MARK = "SIGTERM during load+faults"


@pytest.fixture
def interrupted_run(tmp_path) -> Path:
    """The recorded real baseline run (every column PASS), marked as interrupted."""
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    RunLayout(run).interrupted.write_text(MARK + "\n")
    return run


def test_the_mark_is_read_and_absent_means_not_interrupted(interrupted_run, tmp_path):
    assert interrupted(interrupted_run) == MARK
    assert interrupted(tmp_path) is None


def test_mark_interrupted_turns_passes_unknown_and_keeps_a_fail():
    doc = {"columns": [
        {"name": "a", "verdict": "PASS", "reasons": []},
        {"name": "b", "verdict": "SKIPPED", "reasons": []},
        {"name": "c", "verdict": "FAIL", "reasons": []}]}
    mark_interrupted(doc, MARK)
    assert [c["verdict"] for c in doc["columns"]] == ["UNKNOWN", "UNKNOWN", "FAIL"]
    assert MARK in doc["columns"][0]["reasons"][0]
    assert doc["interrupted"] == MARK and X.set_run(doc) == 1
    clean = {"columns": [{"name": "a", "verdict": "PASS", "reasons": []}]}
    mark_interrupted(clean, MARK)
    assert X.set_run(clean) == EXIT_INCOMPLETE


def test_analyze_says_so_even_when_the_run_stopped_before_its_drain(interrupted_run, capsys):
    RunLayout(interrupted_run).drain.unlink()  # stopped during load: no drain.json yet
    rc = main(["analyze", str(interrupted_run)])
    out = capsys.readouterr()
    assert rc == EXIT_INCOMPLETE
    assert out.out.startswith(f"run interrupted: {MARK}")
    assert "drain.json" in out.err


def test_the_clock_names_the_phase_a_signal_broke_off():
    clock = PhaseClock()
    with pytest.raises(KeyboardInterrupt):
        with clock.phase("load+faults"):
            with clock.phase("heal"):
                raise KeyboardInterrupt("SIGTERM")
    assert clock.broken_off == "heal" and clock.current is None
