"""Spark's start-up lines stay in the run's log files, off the terminal (issue 17).

`verifier analyze` on a recorded run, as a user runs it (its own process, so its own
Spark JVM): neither its stderr nor its stdout carries a line of the JVM's start-up
chatter; the lines are in RUN/logs/verifier-spark.log instead. `verifier chaos` is held to
the same in tests/integration/orchestration/test_external_spark.py and test_external_cluster.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.layout import RunLayout

pytestmark = pytest.mark.integration

RECORDED = Path(__file__).resolve().parents[2] / "data" / "runs" / "baseline"

#: what Spark's JVM prints while it starts (log4j's defaults, Hadoop, the JDK)
SPARK_CHATTER = ("NativeCodeLoader", "Using Spark's default log4j profile",
                 "Setting default log level", "To adjust logging level",
                 "WARNING: Using incubator modules")


def chatter(text: str) -> list[str]:
    """The lines of ``text`` that are Spark's start-up chatter (or any log4j WARN)."""
    return [line for line in text.splitlines()
            if any(c in line for c in SPARK_CHATTER) or " WARN " in line]


def test_analyze_keeps_spark_start_up_lines_in_the_log_file(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "verifier", "analyze", str(run),
                           "--out", str(out)], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert chatter(done.stderr) == [], done.stderr
    assert chatter(done.stdout) == [], done.stdout
    log = RunLayout(out).spark_log.read_text()
    assert "Using Spark's default log4j profile" in log, log[:2000]
