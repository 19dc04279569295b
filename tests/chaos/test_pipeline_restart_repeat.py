"""Issue 38's done-when, end to end: Spark's Kafka sink claimed exactly-once, its driver
killed mid-batch twice per run, three runs. Every kill waits for its trigger (a batch
partly written, not committed), so every restart replays a written batch and the column
FAILs 3 of 3, each kill's exposure saying what it met.

Chaos tier (`make test-chaos`): about 15 minutes on 2 cores.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]


def test_kafka_sink_claiming_exactly_once_fails_every_repetition(tmp_path):
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--pipeline", "kafka-sink",
                           "--pipeline-guarantee", "exactly-once", "--scenario",
                           "pipeline-restart", "--repeat", "3", "--out", str(tmp_path),
                           "--base-port", "29800", "--state-dir", str(tmp_path / "state")],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    said = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 1, said
    matrix = orjson.loads((tmp_path / "verdict.json").read_bytes())
    outcomes = matrix["grid"]["outcomes"]["pipeline-restart"]["pipeline:kafka-sink"]
    assert outcomes == ["FAIL"] * 3, said
    assert "FAIL 3/3" in proc.stdout, said
    for doc in matrix["runs"]:
        (col,) = [c for c in doc["columns"] if c["name"] == "pipeline:kafka-sink"]
        assert "duplicate-delivery" in col["forbidden"], col
        kills = col["exposure"]["faults"]
        assert len(kills) == 2 and all(k["acted"] and k["exercised"] for k in kills), kills
