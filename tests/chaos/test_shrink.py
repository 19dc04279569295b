"""Issue 35's proof, end to end: a FAIL planted by a scenario of three faults of which one
causes it (a naive foreachBatch claiming exactly-once under a driver kill mid-batch; an
ack loss and a broker pause that change nothing for it), shrunk by `verifier shrink`: the
shrunk scenario keeps the driver kill, drops the other two, and FAILs again when run.

Chaos tier (`make test-chaos`): a chaos run (3 min), the shrink within a 30-minute budget
(calibration 1 run, one run per dropped fault that still FAILs, 2 clean runs for the kill,
then durations and workload until the budget, 1 confirmation: 9 runs in 27 min on
2026-11-27), then the shrunk scenario once more: about 35 minutes on a loaded 2-core
machine.
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
BASE_PORT = os.environ.get("VERIFIER_TEST_BASE_PORT", "29840")

#: one fault breaks the column; the other two act on the producers' side only
PLANTED = '''description = "a driver kill breaks foreachBatch's exactly-once; two faults do not"

[workload]
duration_s = 45
rate = 50
modes = ["at-least-once", "idempotent"]

[[faults]]
kind = "ack-loss"
target = { all = true }
start = 4
duration = 10
params = { probability = 0.08, action = "close", trigger = "appended" }

[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = [8, 10]
duration = 3
params = { trigger = "mid-batch", within = 120 }

[[faults]]
kind = "broker-pause"
target = { leader = { topic = "@idempotent", partition = 1 } }
start = 20
duration = 6
'''
COLUMN = "pipeline:foreach-batch"
PIPELINE = ["--pipeline", "foreach-batch", "--pipeline-guarantee", "exactly-once"]


def _verifier(*args: str, timeout: float) -> subprocess.CompletedProcess:
    verifier = Path(sys.executable).with_name("verifier")
    return subprocess.run([str(verifier), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _column(doc: dict) -> dict:
    (col,) = [c for c in doc["columns"] if c["name"] == COLUMN]
    return col


def test_shrink_keeps_the_driver_kill_and_drops_the_unrelated_faults(tmp_path):
    planted = tmp_path / "planted.toml"
    planted.write_text(PLANTED)
    where = ["--base-port", BASE_PORT, "--state-dir", str(tmp_path / "state")]
    run = _verifier("chaos", "--scenario", str(planted), *PIPELINE, "--out",
                    str(tmp_path / "runs"), *where, timeout=1800)
    said = run.stdout[-4000:] + run.stderr[-2000:]
    assert run.returncode == 1, said
    (run_dir,) = [line.split("verifier shrink ", 1)[1].strip()
                  for line in run.stdout.splitlines() if "verifier shrink " in line]
    assert "duplicate-delivery" in _column(orjson.loads(
        (Path(run_dir) / "verdict.json").read_bytes()))["forbidden"], said

    out = tmp_path / "shrink"
    shrink = _verifier("shrink", run_dir, "--budget", "30m", "--calibrate", "1", "--confirm",
                       "1", "--out", str(out), *where, timeout=3600)
    said = shrink.stdout[-6000:] + shrink.stderr[-2000:]
    assert shrink.returncode == 0, said
    report = orjson.loads((out / "shrink.json").read_bytes())
    assert (report["column"], report["kind"]) == (COLUMN, "duplicate-delivery"), report
    shrunk = tomllib.loads((out / "shrunk.toml").read_text())
    assert [f["kind"] for f in shrunk["faults"]] == ["process-kill"], said
    assert report["confirmation"]["reproduced"] >= 1, said

    again = _verifier("chaos", "--scenario", str(out / "shrunk.toml"), *PIPELINE, "--out",
                      str(tmp_path / "again"), *where, timeout=1800)
    said = again.stdout[-4000:] + again.stderr[-2000:]
    assert again.returncode == 1, said
    matrix = orjson.loads((tmp_path / "again" / "verdict.json").read_bytes())
    assert "duplicate-delivery" in _column(matrix["runs"][0])["forbidden"], said
