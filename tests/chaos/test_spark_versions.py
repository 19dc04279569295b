"""Issue 34's done-when for Spark versions, end to end: the Delta preset through
`pipeline-restart` on PySpark 3.5.7 (Scala 2.12, Delta 3.3.2) and 4.2.0 (Delta 4.4.0),
a column per version side by side, each driver in its own environment
(.spark-envs/<version>, installed on first use) while the observer keeps the project's
PySpark. Both Delta sinks are exactly-once under driver kills: PASS, nothing lost,
nothing written twice.

Chaos tier (`make test-chaos`): the first run installs both environments (two PySpark
wheels, a few minutes on a fast link), then about 10 minutes on 2 cores.
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
VERSIONS = ("3.5.7", "4.2.0")
BASE_PORT = int(os.environ.get("VERIFIER_TEST_BASE_PORT", "29700"))


@pytest.mark.timeout(5500)  # past the tier's 600 s: the subprocess's own 5,400 s decides
def test_a_column_per_spark_version(tmp_path):
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--pipeline", "delta", "--spark-version",
                           ",".join(VERSIONS), "--scenario", "pipeline-restart",
                           "--out", str(tmp_path), "--base-port", str(BASE_PORT),
                           "--state-dir", str(tmp_path / "state")],
                          cwd=ROOT, capture_output=True, text=True, timeout=5400)
    said = proc.stdout[-4000:] + proc.stderr[-2000:]
    doc = orjson.loads(next((tmp_path / "pipeline-restart").glob("*/verdict.json"))
                       .read_bytes())
    for v in VERSIONS:
        (col,) = [c for c in doc["columns"] if c["name"] == f"pipeline:delta@spark-{v}"]
        assert col["anomalies"]["lost"]["count"] == 0, col
        assert col["anomalies"]["duplicate-delivery"]["count"] == 0, col
        assert col["verdict"] in ("PASS", "NOT EXERCISED"), col["reasons"]
        assert f"pipeline:delta@spark-{v}" in proc.stdout, said
    # each driver ran its own PySpark: its log says which (streaming.pipelines.driver)
    logs = {v: next((tmp_path / "pipeline-restart").glob(
        f"*/logs/pipeline-delta@spark-{v}*")).read_text(errors="replace") for v in VERSIONS}
    assert all(f"started on PySpark {v}:" in text for v, text in logs.items()), \
        {v: t[-500:] for v, t in logs.items()}
    assert proc.returncode in (0, 3), said
