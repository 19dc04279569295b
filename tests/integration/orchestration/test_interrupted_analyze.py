"""`verifier analyze` on a run folder a signal stopped does not call it complete (issue
17): the analysis itself, on the recorded baseline marked as interrupted (the mark and its
effect on a verdict are unit cases: tests/unit/orchestration/test_interrupted.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tests.unit.orchestration.test_interrupted import MARK, RECORDED
from verifier.cli import EXIT_INCOMPLETE, main
from verifier.rundata.layout import RunLayout

pytestmark = pytest.mark.integration


@pytest.fixture
def interrupted_run(tmp_path) -> Path:
    """The recorded real baseline run (every column PASS), marked as interrupted."""
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    RunLayout(run).interrupted.write_text(MARK + "\n")
    return run


def test_analyze_says_the_run_was_interrupted_and_claims_no_pass(spark, interrupted_run,
                                                                  capsys):
    rc = main(["analyze", str(interrupted_run)])
    out = capsys.readouterr().out
    assert rc == EXIT_INCOMPLETE
    assert out.startswith(f"run interrupted: {MARK}"), out[:500]
    assert "INTERRUPTED" in out.splitlines()[1], out[:500]  # the table's head line
    doc = orjson.loads(RunLayout(interrupted_run).verdict.read_bytes())
    assert doc["interrupted"] == MARK and doc["exit_code"] == EXIT_INCOMPLETE
    assert {c["verdict"] for c in doc["columns"]} == {"UNKNOWN"}
    assert all(any("interrupted" in r for r in c["reasons"]) for c in doc["columns"])
