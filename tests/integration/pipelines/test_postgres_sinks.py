"""foreachBatch into a real PostgreSQL (issue 46): the server the run starts from the
distribution's packages, the JDBC driver from Maven Central; both claiming exactly-once,
the upsert by the record's place in the log passes, the naive append FAILs on the
replayed batch's rows."""

from __future__ import annotations

import subprocess

import pytest

from tests.integration.pipelines.test_pipelines import chaos, column, count

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(1500)]

RESTART = """
description = "pipeline-restart, short, database sinks"
[options]
drain_timeout_s = 240
[workload]
modes = ["idempotent"]
duration_s = 40
rate = 60
partitions = 2
[[faults]]
kind = "process-kill"
target = { process = "pipeline" }
start = [12, 14]
duration = 2
params = { trigger = "mid-batch", within = 240 }
"""


def test_upsert_passes_and_append_fails_on_the_replayed_rows(tmp_path, bootstrap):
    code, text, doc = chaos(tmp_path, bootstrap, RESTART,
                            "--pipeline", "postgres-upsert,postgres-append",
                            "--pipeline-guarantee", "exactly-once")
    assert doc, text[-3000:]
    upsert, append = column(doc, "postgres-upsert"), column(doc, "postgres-append")
    assert upsert["verdict"] == "PASS", (upsert["reasons"], upsert["anomalies"])
    assert upsert["counts"]["observed"] == upsert["counts"]["sent"] > 0
    assert any(f.get("acted") for f in upsert["exposure"]["faults"]), upsert["exposure"]
    assert append["verdict"] == "FAIL", append["reasons"]
    assert append["forbidden"] == ["duplicate-delivery"] and count(append, "lost") == 0
    dup = append["anomalies"]["duplicate-delivery"]["sample"][0]["evidence"]
    assert dup["in_output"] == 2 and len(set(dup["output_batches"])) == 1, dup
    assert code == 1, text[-3000:]
    # the server the run started is gone, with its scratch folder
    left = subprocess.run(["pgrep", "-f", "verifier-postgresql-"], capture_output=True)
    assert left.returncode == 1, left.stdout
