"""`verifier chaos --spark-master spark://…` on a real standalone master (issue 17).

A Spark standalone master and one worker with 2 cores are started from the installed
PySpark distribution (`bin/spark-class`) on 127.0.0.1, on free ports the system hands out
(fixed ones collide with other clusters on a shared machine). A shortened
`baseline` then runs with `--spark-master` pointing there: the tool's two Spark
applications (the observer, and the tool's own verification) must both get a core of the
worker and the run must pass in every column. The master's JSON status shows both
applications ran there. Master and worker are stopped by PID whatever happens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import orjson
import pytest
from pyspark.find_spark_home import _find_spark_home

from tests.integration.spark_chatter import chatter
from verifier.harness.spark_standalone import free_ports
from verifier.orchestration.scenario import SCENARIO_DIR
from verifier.rundata import jvm
from verifier.rundata.errors import VerifierError
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.waiting import GiveUp, wait_until

#: a whole `verifier chaos` run of its own (issue 39): in the chaos tier, `make test-runs`
#: (CI's step after `make test`), not in `make test`
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

WORKER_CORES = 2


def _daemon(name: str, args: list[str], folder: Path) -> subprocess.Popen:
    """`bin/spark-class CLASS ARGS` (it execs the JVM: the PID is the JVM's), output to a
    log file in ``folder``."""
    spark_class = Path(_find_spark_home()) / "bin" / "spark-class"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
           "SPARK_DAEMON_MEMORY": "512m"}
    with open(folder / f"{name}.log", "ab") as log:
        return subprocess.Popen([str(spark_class), *args], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=folder)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def master_status(ui_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture
def standalone(tmp_path_factory) -> tuple[str, int]:
    """A standalone master and a 2-core worker; yields the master URL and its web UI port
    (whose /json/ lists the applications)."""
    jvm.choose_java()  # JAVA_HOME: the JVM the tool itself will use
    folder = tmp_path_factory.mktemp("spark-standalone")
    master_port, master_ui, worker_port, worker_ui = free_ports(4)
    url = f"spark://127.0.0.1:{master_port}"
    started = []
    try:
        master = _daemon("master", ["org.apache.spark.deploy.master.Master", "--host",
                                    "127.0.0.1", "--port", str(master_port),
                                    "--webui-port", str(master_ui)], folder)
        started.append(master)
        worker = _daemon("worker", ["org.apache.spark.deploy.worker.Worker", "--host",
                                    "127.0.0.1", "--port", str(worker_port), "--webui-port",
                                    str(worker_ui), "--cores", str(WORKER_CORES),
                                    "--memory", "3g", "--work-dir", str(folder / "work"),
                                    url], folder)
        started.append(worker)

        def registered():
            for p, name in ((master, "master"), (worker, "worker")):
                if p.poll() is not None:
                    log = (folder / f"{name}.log").read_text()[-3000:]
                    raise GiveUp(VerifierError(f"the Spark {name} exited ({p.returncode}):\n"
                                               f"{log}"))
            workers = [w for w in master_status(master_ui)["workers"]
                       if w["state"] == "ALIVE"]
            return bool(workers), f"{len(workers)} alive workers"

        wait_until(registered, timeout=180, what="the standalone worker to register",
                   expected="one ALIVE worker in the master's /json/", interval=0.5)
        yield url, master_ui
    finally:
        for proc in reversed(started):  # by PID: the JVMs themselves (spark-class execs)
            _stop(proc)


def short_baseline(folder: Path) -> Path:
    """The shipped baseline scenario with an 8 s load."""
    text = (SCENARIO_DIR / "baseline.toml").read_text()
    assert "duration_s = 20" in text, "baseline.toml changed"
    path = folder / "baseline.toml"
    path.write_text(text.replace("duration_s = 20", "duration_s = 8"))
    return path


def test_baseline_passes_on_a_standalone_master(standalone, bootstrap, tmp_path):
    master, ui_port = standalone
    out = tmp_path / "out"
    # on the tier's shared cluster: the Spark side is under test, not a cluster's start
    argv = [sys.executable, "-m", "verifier", "chaos", "--scenario",
            str(short_baseline(tmp_path)), "--spark-master", master,
            "--bootstrap-servers", bootstrap, "--out", str(out)]
    done = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=1200)
    said = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, said
    matrix = orjson.loads((out / "verdict.json").read_bytes())
    assert set(matrix["grid"]["grid"]["baseline"].values()) == {"PASS"}, said
    assert len(matrix["grid"]["columns"]) == 5

    apps = master_status(ui_port)
    ran = {a["name"]: a for a in apps["completedapps"] + apps["activeapps"]}
    (run,) = matrix["runs"]
    observer = f"observer-{run['run']}"
    assert observer in ran and "verifier-chaos" in ran, sorted(ran)
    for name in (observer, "verifier-chaos"):  # each took one core of the two, no more
        assert ran[name]["cores"] == 1, ran[name]
    assert chatter(done.stderr) == [], done.stderr[-3000:]
