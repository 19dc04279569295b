"""Exposure on a real run (issue 38): one chaos run on the embedded cluster, two modes.

The at-least-once generator is SIGSTOPped (``process-pause``) from before an ack loss and
a broker pause until after both (a pause: a broker kill's window lasts until the broker is
ready again, 10-30 s after its restart, and may outlast the generator's stop): they meet
no load of its, so its column is NOT EXERCISED (stalled), never PASS, and the run exits 3.
The idempotent column keeps sending through both: PASS, and its ack-loss exposure equals
what the proxy's own connection log says the rule did to it (each hit closes one of its
connections, "closed after append by rule").
"""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from tests.conftest import port_base
from verifier.judge import verdict as V
from verifier.rundata.connections import read_connections
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.vocab import EXIT_NOT_EXERCISED

#: a whole `verifier chaos` run of its own (issue 39): in the chaos tier, `make test-runs`
#: (CI's step after `make test`), not in `make test`
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

BASE_PORT = int(os.environ.get("VERIFIER_TEST_EXPOSURE_BASE_PORT",
                               port_base("lifetime") + 200))

SCENARIO = """description = "a generator stopped through the faults meant for it"

[workload]
modes = ["at-least-once", "idempotent"]
duration_s = 26
rate = 100

[[faults]]
kind = "process-pause"
target = { process = "producer:at-least-once" }
start = 3
duration = 17

[[faults]]
kind = "ack-loss"
target = { all = true }
start = 6
duration = 8
params = { every = 4, action = "close" }

[[faults]]
kind = "broker-pause"
target = { leader = { topic = "@idempotent", partition = 0 } }
start = 8
duration = 4
"""


def test_a_stopped_generator_is_not_exercised_and_exposure_matches_the_proxy(tmp_path):
    spec = tmp_path / "stopped.toml"
    spec.write_text(SCENARIO)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "verifier", "chaos", "--scenario", str(spec),
         "--base-port", str(BASE_PORT), "--state-dir", str(tmp_path / "state"),
         "--out", str(out)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=1200)
    said = (done.stdout + done.stderr)[-6000:]
    (run_dir,) = [p.parent for p in out.glob("stopped/*/verdict.json")]
    doc = orjson.loads((run_dir / "verdict.json").read_bytes())
    cols = {c["name"]: c for c in doc["columns"]}
    alo, idem = cols["at-least-once"], cols["idempotent"]

    assert alo["verdict"] == V.NOT_EXERCISED, said
    assert any("stalled" in r for r in alo["not_exercised"]), alo["not_exercised"]
    by_fault = {e["fault"]: e for e in alo["exposure"]["faults"]}
    assert by_fault["ack-loss"]["stalled"] and by_fault["broker-pause"]["stalled"]
    assert idem["verdict"] == V.PASS, said
    assert idem["exposure"]["exercised"] is True
    assert done.returncode == EXIT_NOT_EXERCISED, said
    assert "NOT EXERCISED because" in done.stdout, said

    # the idempotent column's ack-loss exposure against the proxy's connection log
    (ack,) = [e for e in idem["exposure"]["faults"] if e["fault"] == "ack-loss"]
    log = read_connections(run_dir / "connections.jsonl")
    rule = next(op["detail"]["rule"]["id"] for op in _nemesis(run_dir)
                if op.get("fault") == "ack-loss" and op.get("f") == "start"
                and op.get("type") == "ok")
    closed = [c for c in log.connections if c.by == "fault"
              and c.reason == f"closed after append by rule {rule}"]
    idem_pids = set(idem["pids"])
    mine = [c for c in closed if c.process.split(" ", 1)[-1] in idem_pids]
    assert ack["acted"] > 0, ack
    assert ack["acted"] == len(mine), (ack, [(c.client_id, c.reason) for c in closed])


def _nemesis(run_dir):
    lines = (run_dir / "nemesis.jsonl").read_bytes().splitlines()
    return [orjson.loads(x) for x in lines[1:] if x.strip()]
