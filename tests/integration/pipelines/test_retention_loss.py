"""Records aged out before a pipeline read them (issue 34), on the real test cluster and
Spark: the ``delta`` preset twice side by side, its Kafka source with
``failOnDataLoss=true`` and ``false``; both drivers killed with a batch in flight
(trigger ``batch-planned``) and held down while
the run's topic keeps its records 5 s only (the retention fault, once both are down),
then restarted from their checkpoints.

- true: the query stops with Spark's error; the column is reported stopped with that
  message, never PASS;
- false: it skips the deleted offsets and goes on: those records are lost for that
  pipeline (expected of the setting under retention), each saying retention deleted it;
- the producer column loses nothing: the observer read every record live, and the log
  start offset after the drain shows the deletion to the plain reader's check.

The test cluster checks retention every second (verifier.harness.cluster.config).
"""

from __future__ import annotations

import pytest

from tests.integration.pipelines.test_pipelines import chaos, column, count

#: a whole scenario of minutes (issue 39): in the chaos tier (make test-chaos; CI runs the
#: pipelines' scenarios as their own step, make test-pipelines), not in make test
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

SCENARIO = """
description = "retention-loss, short"
[options]
drain_timeout_s = 300
[workload]
modes = ["at-least-once"]
duration_s = 30
rate = 40
partitions = 1
[pipelines]
fail_on_data_loss = [true, false]
[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = 2
duration = 22
params = { trigger = "batch-planned", within = 300 }
[[faults]]
kind = "retention"
target = { all = true }
start = 3
duration = 12
params = { retention_ms = 5000, segment_ms = 1000, trigger = "pipelines-down", within = 360 }
"""

STOPS, SKIPS = "delta@failOnDataLoss=true", "delta@failOnDataLoss=false"


@pytest.fixture(scope="module")
def run(tmp_path_factory, bootstrap) -> tuple[int, str, dict]:
    return chaos(tmp_path_factory.mktemp("retention-loss"), bootstrap, SCENARIO,
                 "--pipeline", "delta")


def test_fail_on_data_loss_true_stops_and_is_reported_stopped(run):
    code, text, doc = run
    assert doc, text[-3000:]
    col = column(doc, STOPS)
    assert col["verdict"] == "UNKNOWN", col
    stopped = [r for r in col["reasons"] if r.startswith("the query stopped with an error:")]
    # Spark's own words, from the cause under the task failure the query reports first
    assert stopped and "Some data may have been lost" in stopped[0], col["reasons"]
    assert count(col, "lost") == 0
    assert code == 2, text[-3000:]  # the stopped column is the worst


def test_fail_on_data_loss_false_loses_the_deleted_records_and_says_why(run):
    _, text, doc = run
    col = column(doc, SKIPS)
    lost = col["anomalies"]["lost"]
    assert lost["count"] > 0 and lost["expectation"] == "expected", col
    assert "retention deleted it before this pipeline read it" in \
        lost["sample"][0]["evidence"]["deleted"]
    assert col["verdict"] == "PASS", col["reasons"]
    exposed = [e for e in col["exposure"]["faults"] if e["fault"] == "retention"]
    assert exposed and exposed[0]["acted"] >= lost["count"], exposed


def test_the_producer_is_not_at_fault(run):
    _, _, doc = run
    col = next(c for c in doc["columns"] if c["name"] == "at-least-once")
    assert count(col, "lost") == 0 and col["verdict"] == "PASS", col
