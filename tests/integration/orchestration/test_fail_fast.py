"""`verifier chaos --fail-fast` stops the load at the first forbidden anomaly (issue 16).

A baseline planned for 300 s, two preset modes, on the test cluster as an external
cluster. Once the observer's live checks have judged a batch, the test writes one
undecodable record to the at-least-once topic (a foreign record, forbidden in every
mode). The live checks report it, the load stops long before its planned end, and the run
ends FAIL (exit 1) with that column's evidence; the other column is still judged.
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from kafka import KafkaProducer

from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.layout import layout
from verifier.rundata.plan import read_plan
from verifier.rundata.waiting import GiveUp, wait_until

pytestmark = pytest.mark.integration

PLANNED_S = 300
SCENARIO = f"""description = "baseline, long enough to be cut short"

[workload]
modes = ["at-least-once", "idempotent"]
duration_s = {PLANNED_S}
rate = 100
"""


def _wait_for(what: str, probe, proc: subprocess.Popen, timeout: float):
    def check():
        if proc.poll() is not None:
            raise GiveUp(AssertionError(f"the run ended (exit {proc.returncode}) "
                                        f"before {what}"))
        found = probe()
        return bool(found), found

    return wait_until(check, timeout=timeout, what=what, expected="present",
                      interval=0.5, max_interval=0.5)


def test_fail_fast_stops_the_load_at_a_forbidden_record(bootstrap, tmp_path):
    spec = tmp_path / "baseline.toml"
    spec.write_text(SCENARIO)
    out = tmp_path / "out"
    log = tmp_path / "chaos.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "verifier", "chaos", "--bootstrap-servers", bootstrap,
             "--scenario", str(spec), "--fail-fast", "--out", str(out)],
            cwd=PROJECT_ROOT, stdout=sink, stderr=subprocess.STDOUT)
        try:
            config = _wait_for("run plan", lambda: next(iter(out.glob("*/*/config.json")),
                                                         None), proc, 300)
            run_dir = config.parent
            summary = layout(run_dir).anomalies_of("read_committed") / "summary.json"
            _wait_for("live checks", summary.is_file, proc, 400)
            plan = read_plan(config)
            topic = next(p.topic for p in plan.producers.values()
                         if p.mode == "at-least-once")
            producer = KafkaProducer(bootstrap_servers=bootstrap.split(","))
            producer.send(topic, b"not a record of this run", partition=0).get(timeout=60)
            producer.close()
            code = proc.wait(timeout=900)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    said = log.read_text()[-6000:]
    assert code == 1, said

    doc = orjson.loads((run_dir / "verdict.json").read_bytes())
    assert "at-least-once" in doc.get("stopped_early", ""), said
    assert "foreign" in doc["stopped_early"], said
    verdicts = {c["name"]: c for c in doc["columns"]}
    assert verdicts["at-least-once"]["verdict"] == "FAIL", said
    assert verdicts["at-least-once"]["anomalies"]["foreign-record"]["count"] >= 1, said
    assert verdicts["idempotent"]["verdict"] == "PASS", said
    # the load was cut short: the note says after how many of the planned seconds
    (note,) = [n for n in doc["notes"] if n.startswith("--fail-fast: the load stopped")]
    stopped_after = float(note.split("after ")[1].split(" s of")[0])
    assert stopped_after < PLANNED_S, note
    assert "--fail-fast" in said, said
