"""An external cluster cannot run broker faults: the scenario is SKIPPED, not green
(issue 17).

The integration tier's shared cluster stands in for a user's cluster (the run starts
none of its own). `verifier chaos --bootstrap-servers` runs a shortened
`broker-kill` there: the broker kill is skipped, so every column must be SKIPPED in the
grid, in each run's verdict.json and as a skipped test case with the reason in junit.xml,
and a matrix in which everything was skipped must not exit 0. Spark's start-up lines stay
off the terminal.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from tests.integration.spark_chatter import chatter
from verifier.orchestration.scenario import SCENARIO_DIR
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.layout import RunLayout

#: a whole `verifier chaos` run of its own (issue 39): in the chaos tier, `make test-runs`
#: (CI's step after `make test`), not in `make test`
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def short_broker_kill(folder: Path) -> Path:
    """The shipped broker-kill scenario with an 8 s load and its kill 2 s in."""
    text = (SCENARIO_DIR / "broker-kill.toml").read_text()
    for old, new in (("duration_s = 26", "duration_s = 8"), ("start = 6", "start = 2"),
                     ("duration = [6, 9]", "duration = [2, 3]")):
        assert old in text, f"broker-kill.toml changed: {old!r} not found"
        text = text.replace(old, new)
    path = folder / "broker-kill.toml"
    path.write_text(text)
    return path


def test_skipped_broker_faults_are_skipped_in_junit_and_the_grid(bootstrap, tmp_path):
    out = tmp_path / "out"
    done = _cli("chaos", "--bootstrap-servers", bootstrap,
                "--scenario", str(short_broker_kill(tmp_path)), "--out", str(out),
                timeout=600)
    said = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 2, said  # everything skipped: not a pass
    assert "broker faults are skipped" in done.stdout, said

    cases = ET.parse(out / "junit.xml").getroot().findall("./testsuite/testcase")
    assert len(cases) == 5, said  # four modes, transactional at both isolation levels
    for case in cases:
        skipped = case.find("skipped")
        assert skipped is not None, ET.tostring(case, encoding="unicode")
        assert "broker-kill" in skipped.get("message"), skipped.get("message")
        assert case.find("failure") is None and case.find("error") is None

    matrix = orjson.loads((out / "verdict.json").read_bytes())
    assert matrix["exit_code"] == 2
    assert set(matrix["grid"]["grid"]["broker-kill"].values()) == {"SKIPPED"}
    (run,) = matrix["runs"]
    doc = orjson.loads(RunLayout(run["run_dir"]).verdict.read_bytes())
    assert {c["verdict"] for c in doc["columns"]} == {"SKIPPED"}
    assert all("broker-kill" in c["skipped"] for c in doc["columns"])
    assert "SKIPPED" in done.stdout  # the grid on the terminal

    assert chatter(done.stderr) == [], done.stderr[-3000:]
    assert RunLayout(out).spark_log.exists()
