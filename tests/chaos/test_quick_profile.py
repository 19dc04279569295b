"""The chaos tier: whole scenarios, end to end, as `make chaos PROFILE=quick` runs them.

Not part of `make test` (minutes of load and faults); run it with `make test-chaos`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]


def test_quick_profile_keeps_every_promise_and_every_fault_fires(tmp_path):
    """...and its self-test (--selftest) catches every injected anomaly on every run."""
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--profile", "quick", "--seed", "1",
                           "--out", str(tmp_path), "--base-port", "29700", "--selftest"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    matrix = orjson.loads((tmp_path / "verdict.json").read_bytes())
    assert matrix["format"] == "chaos-matrix"
    cells = [v for row in matrix["grid"]["grid"].values() for v in row.values()]
    assert cells and set(cells) == {"PASS"}
    for doc in matrix["runs"]:
        # each run's own verdict.json is the document the matrix holds
        own = orjson.loads((Path(doc["run_dir"]) / "verdict.json").read_bytes())
        assert own == doc
        # a green cell for a fault that never ran would be a lie: every scheduled fault fired
        assert doc["scenario"] == "baseline" or doc["fault_summary"], doc["scenario"]
        for line in doc["fault_summary"]:
            assert ": fired" in line, line
        # every cell says how hard it was tested, and a PASS was tested
        for col in doc["columns"]:
            assert "exposure" in col, (doc["scenario"], col["name"])
            if doc["scenario"] != "baseline":
                assert col["exposure"]["exercised"] is True, (doc["scenario"], col["name"],
                                                              col["exposure"])
        st = doc["selftest"]
        assert st["ok"] and len(st["rows"]) >= 10, st
        assert orjson.loads((Path(doc["run_dir"]) / "selftest.json").read_bytes())["ok"]
