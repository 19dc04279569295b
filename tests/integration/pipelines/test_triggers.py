"""The ``mid-batch`` trigger on a user's own pipeline, on the real test cluster and Spark.

The pipeline (tests/data/pipelines/naive_append.py) is a plain ``foreachBatch`` that
appends each batch to Parquet and claims exactly-once; it knows nothing of the tool's
batch hold. One run, three kills of its driver:

1. at 0 s, no trigger: the driver is killed and restarted 1 s later;
2. at 2 s, ``mid-batch`` within 3 s: the restarted driver is still starting its Spark
   JVM (10 s or more), so no batch can hold before the limit: not applied, ``fail``, the
   driver left running;
3. at 6 s, ``mid-batch`` within 600 s (a restarted driver took 4 minutes to its first
   batch on this 2-core machine at load 40-58, 2026-11-27): it waits in its own thread
   for the restarted driver's first batch to be written and held, kills it there, and
   the restart appends that batch again: duplicates in the output, so the exactly-once claim FAILs.
"""

from __future__ import annotations

import orjson
import pytest

from tests.integration.pipelines.test_pipelines import chaos, column, count
from verifier.rundata.jvm import PROJECT_ROOT

#: a whole scenario of minutes (issue 39): in the chaos tier (make test-chaos; CI runs the
#: pipelines' scenarios as their own step, make test-pipelines), not in make test
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PIPELINE = PROJECT_ROOT / "tests" / "data" / "pipelines" / "naive_append.py"
NAME = "naive-append"

SCENARIO = """
description = "three driver kills: at once, a trigger that cannot come, a trigger that does"
[options]
drain_timeout_s = 480
[workload]
modes = ["at-least-once"]
duration_s = 20
rate = 40
partitions = 2
[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = 0
duration = 1
[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = 2
duration = 1
params = { trigger = "mid-batch", within = 3 }
[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = 6
duration = 2
params = { trigger = "mid-batch", within = 600 }
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory, bootstrap) -> tuple[int, str, dict, list[dict]]:
    tmp = tmp_path_factory.mktemp("triggers")
    code, text, doc = chaos(tmp, bootstrap, SCENARIO, "--pipeline", str(PIPELINE))
    runs = sorted((tmp / "out" / "scenario").glob("*/nemesis.jsonl"))
    nemesis = [orjson.loads(x) for x in runs[-1].read_bytes().splitlines()[1:]] if runs else []
    return code, text, doc, nemesis


def starts(nemesis: list[dict]) -> dict[int, dict]:
    """Fault id -> its start's completion line."""
    return {e["id"]: e for e in nemesis if e.get("f") == "start" and e["type"] != "invoke"}


def test_a_trigger_that_cannot_come_leaves_the_driver_alone(run):
    code, text, _, nemesis = run
    assert nemesis, text[-3000:]
    done = starts(nemesis)
    assert done[1]["type"] == "ok" and "trigger" not in done[1]["detail"]
    assert done[2]["type"] == "fail", done[2]
    assert "trigger mid-batch did not come within 3 s" in done[2]["error"], done[2]
    assert not [e for e in nemesis if e["id"] == 2 and e["f"] == "heal"]  # nothing to heal
    # one line on the terminal says so
    said = [ln for ln in text.splitlines() if "did not fire" in ln and "within 3 s" in ln]
    assert len(said) == 1, text[-3000:]


def test_the_triggered_kill_lands_mid_batch_and_the_replay_duplicates(run):
    code, text, doc, nemesis = run
    kill = starts(nemesis)[3]
    assert kill["type"] == "ok", kill
    detail = kill["detail"]
    assert detail["trigger"] == "mid-batch" and detail["mid_batch"] is True, detail
    assert detail["hold"] == "foreachBatch"  # the user's function, wrapped by the driver
    assert isinstance(detail["batch"], int) and detail["batch_offsets"] > 0, detail
    assert detail["waited_s"] > 0
    col = column(doc, NAME)
    assert col["expect"] == "pipeline/exactly-once"
    assert count(col, "duplicate-delivery") > 0, col
    assert count(col, "lost") == 0, col
    assert col["verdict"] == "FAIL", col["reasons"]
    assert code == 1, text[-3000:]

