"""Spark's real-time mode under driver kills, beside the same query on the micro-batch
trigger (issue 46), end to end on PySpark 4.2.0.

`examples/pipelines/realtime_events.py` (its events copied to Spark's Kafka sink,
stateless, ``trigger(realTime="10 seconds")``) and its ``micro_batch`` twin (the same query,
``processingTime="1 second"``) through two driver kills each. Real-time mode commits a
batch's offsets at its end, after its records were written: each kill, 8 s into a 10-s
batch, makes the restarted query write that batch's records again, more than the
micro-batch twin's one held batch. Both claim at-least-once (Spark's Kafka sink): PASS,
nothing lost, the records written again tolerated and counted per kill in verdict.json,
the terminal and report.html.

Chaos tier (`make test-chaos`): about 5 minutes on 2 cores (the 4.2.0 environment is
installed on first use: minutes more).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pipelines" / "realtime_events.py"
BASE_PORT = int(os.environ.get("VERIFIER_TEST_BASE_PORT", "29900"))

#: two kills of each driver; the second well after the first driver's restart (a JVM)
RESTART = """
description = "pipeline-restart, short: real-time mode beside micro-batch"
[options]
drain_timeout_s = 240
[workload]
modes = ["idempotent"]
duration_s = 75
rate = 60
partitions = 2
[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = [12, 14]
duration = 3
params = { trigger = "mid-batch", within = 240 }
[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = [50, 55]
duration = 3
params = { trigger = "mid-batch", within = 300 }
"""


def _own_pyspark() -> tuple[int, ...]:
    import pyspark

    return tuple(int(p) for p in pyspark.__version__.split(".")[:2])


#: the project's own PySpark when it has real-time mode (4.1+), else 4.2.0's environment
FLAGS = () if _own_pyspark() >= (4, 1) else ("--spark-version", "4.2.0")
SUFFIX = "" if not FLAGS else "@spark-4.2.0"


@pytest.mark.timeout(1800)
def test_real_time_mode_rewrites_more_per_kill_than_micro_batch(tmp_path):
    spec = tmp_path / "scenario.toml"
    spec.write_text(RESTART)
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run(
        [str(verifier), "chaos", "--scenario", str(spec), *FLAGS,
         "--pipeline", f"{EXAMPLE},{EXAMPLE}:micro_batch", "--out", str(tmp_path / "out"),
         "--base-port", str(BASE_PORT), "--state-dir", str(tmp_path / "state")],
        cwd=ROOT, capture_output=True, text=True, timeout=1700)
    said = proc.stdout[-4000:] + proc.stderr[-2000:]
    verdicts = sorted((tmp_path / "out").glob("scenario/*/verdict.json"))
    assert verdicts, said
    doc = orjson.loads(verdicts[-1].read_bytes())
    cols = {c["name"]: c for c in doc["columns"]}
    rt = cols[f"pipeline:realtime-events{SUFFIX}"]
    mb = cols[f"pipeline:realtime-events-micro-batch{SUFFIX}"]
    for col in (rt, mb):
        assert col["anomalies"]["lost"]["count"] == 0, (col["name"], said)
        assert col["verdict"] == "PASS", (col["name"], col["reasons"], col["forbidden"])
    assert rt["duplicate_window"]["trigger"] == "real-time", rt["duplicate_window"]
    assert rt["duplicate_window"]["trigger_ms"] == 10_000
    assert mb["duplicate_window"]["trigger"] == "processing-time", mb["duplicate_window"]
    assert rt["duplicate_window"]["kills"] >= 1 and mb["duplicate_window"]["kills"] >= 1
    # the window grows with the batch: 8 s of a 10-s real-time batch against one held
    # micro-batch
    assert rt["duplicate_window"]["per_kill"] > mb["duplicate_window"]["per_kill"] > 0, \
        (rt["duplicate_window"], mb["duplicate_window"])
    assert "real-time trigger, batches of 10 s" in proc.stdout, said
    html = next((tmp_path / "out").glob("scenario/*/report.html")).read_text()
    assert "Duplicate window per kill" in html
    assert proc.returncode == 0, said
