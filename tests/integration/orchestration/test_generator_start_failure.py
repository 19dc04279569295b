"""One generator that cannot start makes only its own column UNKNOWN (issue 13).

`verifier chaos --client java` on the test cluster (as an external cluster) runs a short
baseline with two preset modes and the user's column, whose properties file holds a
setting the pre-start checks let through and the Java client rejects when its producer is
constructed (`metadata.max.age.ms=-1`). The run completes: the presets PASS, the user's
column is UNKNOWN with one line naming the setting, the run folder records the failure
(RUN/generators-failed.json) so `verifier analyze` agrees offline, and the exit code is 2.
That offline analysis, in its own process and JVM as a user runs it, also keeps Spark's
start-up lines in its log file, off the terminal (issue 17).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.integration.spark_chatter import chatter
from verifier.rundata import jvm
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.layout import RunLayout
from verifier.rundata.startfail import read_start_failures

pytestmark = pytest.mark.integration


def _cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_a_generator_that_cannot_start_leaves_the_others_judged(bootstrap, tmp_path):
    if not jvm.java_generator_built():
        pytest.skip("the Java generator is not built: run `make setup`")
    props = tmp_path / "bad.properties"
    props.write_text("acks=all\nenable.idempotence=true\nmetadata.max.age.ms=-1\n")
    scenario = tmp_path / "baseline.toml"
    scenario.write_text('description = "baseline, short"\n\n[workload]\n'
                        'modes = ["at-least-once", "idempotent"]\nduration_s = 8\n'
                        'rate = 100\n')
    out = tmp_path / "out"
    done = _cli("chaos", "--bootstrap-servers", bootstrap, "--client", "java",
                "--scenario", str(scenario), "--producer-config", str(props),
                "--out", str(out), timeout=900)
    said = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 2, said

    matrix = orjson.loads((out / "verdict.json").read_bytes())
    (doc,) = matrix["runs"]
    verdicts = {c["name"]: c["verdict"] for c in doc["columns"]}
    assert verdicts == {"at-least-once": "PASS", "idempotent": "PASS",
                        "user:bad.properties": "UNKNOWN"}, said
    (user,) = [c for c in doc["columns"] if c["verdict"] == "UNKNOWN"]
    (why,) = user["reasons"]
    assert why.startswith("producer user-0 never started: exited "), why
    assert "metadata.max.age.ms" in why, why

    unknown = [line for line in done.stdout.splitlines() if "UNKNOWN because" in line]
    assert unknown == [f"user:bad.properties: UNKNOWN because {why}"], said
    assert "Traceback" not in done.stdout + done.stderr, said

    run_dir = Path(doc["run_dir"])
    failed = read_start_failures(RunLayout(run_dir).start_failures)
    assert list(failed) == ["user-0"] and failed["user-0"]["exit_code"] not in (0, None)

    # no Kafka: the same verdicts; as a user runs it (its own process and Spark JVM) and
    # with a fresh --out, Spark's start-up lines go to the log file, off the terminal
    offline = _cli("analyze", str(run_dir), "--out", str(tmp_path / "offline"), timeout=600)
    assert offline.returncode == 2, offline.stdout[-3000:] + offline.stderr[-3000:]
    assert chatter(offline.stderr) == [] and chatter(offline.stdout) == [], offline.stderr
    log = RunLayout(tmp_path / "offline").spark_log.read_text()
    assert "Using Spark's default log4j profile" in log, log[:2000]
    again = orjson.loads((tmp_path / "offline" / "verdict.json").read_bytes())
    assert {c["name"]: (c["verdict"], c["reasons"]) for c in again["columns"]} == {
        c["name"]: (c["verdict"], c["reasons"]) for c in doc["columns"]}
