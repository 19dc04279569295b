"""Issue 51's proof, end to end: `verifier explore` on an affected combination of the
known-bugs grid (Kafka 3.5.2, kafka-python: KAFKA-14402 and KAFKA-17754 (b) are
documented affected there) finds a FAIL with no bug-specific schedule, shrinks it with
`verifier shrink`'s search, names it as a known bug, and its shrunk scenario FAILs again
when `verifier chaos` runs it; a second call on the same folder resumes (tries nothing
twice).

Chaos tier (`make test-chaos`): two explore calls (12 and 3 minutes of budget) and one
chaos run of the shrunk scenario: about 20 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
BASE_PORT = os.environ.get("VERIFIER_TEST_BASE_PORT", "29860")
KNOWN = {"KAFKA-14402", "KAFKA-17754 (b)", "KAFKA-17754"}


def _verifier(*args: str, timeout: float) -> subprocess.CompletedProcess:
    verifier = Path(sys.executable).with_name("verifier")
    return subprocess.run([str(verifier), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_explore_finds_shrinks_and_names_a_known_bug_and_resumes(tmp_path):
    out = tmp_path / "explore"
    where = ["--base-port", BASE_PORT, "--state-dir", str(tmp_path / "state")]
    first = _verifier("explore", "--kafka-version", "3.5.2", "--client", "kafka-python",
                      "--budget", "12m", "--out", str(out), *where, timeout=1500)
    said = first.stdout[-6000:] + first.stderr[-2000:]
    assert first.returncode == 1, said
    ledger = orjson.loads((out / "explore.json").read_bytes())
    shrunk = [f for f in ledger["findings"].values() if f.get("shrink")]
    assert shrunk, said
    named = [f for f in shrunk if any(k["bug"] in KNOWN and k["status"] == "affected"
                                      for k in f["known"])]
    assert named, ledger["findings"]
    finding = named[0]
    assert finding["shrink"]["stopped"] in ("done", "budget"), finding
    scenario = Path(finding["scenario"])
    assert tomllib.loads(scenario.read_text())["faults"], scenario.read_text()
    assert "FINDING" in first.stdout and (out / "report.md").exists()

    tried = set(ledger["trials"])
    second = _verifier("explore", "--kafka-version", "3.5.2", "--client", "kafka-python",
                       "--budget", "3m", "--out", str(out), *where, timeout=900)
    assert second.returncode == 1, second.stdout[-4000:] + second.stderr[-2000:]
    again = orjson.loads((out / "explore.json").read_bytes())
    assert tried < set(again["trials"]) and len(again["sessions"]) == 2
    assert {k: again["trials"][k]["run_dir"] for k in tried} == \
        {k: ledger["trials"][k]["run_dir"] for k in tried}  # nothing run twice

    rerun = _verifier("chaos", "--scenario", str(scenario), "--kafka-version", "3.5.2",
                      "--out", str(tmp_path / "again"), *where, timeout=900)
    said = rerun.stdout[-4000:] + rerun.stderr[-2000:]
    assert rerun.returncode == 1, said
    matrix = orjson.loads((tmp_path / "again" / "verdict.json").read_bytes())
    col = next(c for c in matrix["runs"][0]["columns"] if c["name"] == finding["column"])
    assert finding["anomaly"] in col["forbidden"], said
