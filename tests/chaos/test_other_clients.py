"""The chaos tier on the other clients: the quick profile (baseline, ack-loss,
producer-kill) with every column's generator on Kafka's Java producer
(`verifier chaos --client java`) or on librdkafka (`--client librdkafka`).

Not part of `make test`; ports and folder from VERIFIER_CHAOS_BASE_PORT and
VERIFIER_CHAOS_STATE_DIR (defaults: 29900, .state/chaos-clients).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from producers.clients import client_version
from verifier.rundata import jvm
from verifier.rundata.history import read_history

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
BASE_PORT = os.environ.get("VERIFIER_CHAOS_BASE_PORT", "29900")
STATE_DIR = os.environ.get("VERIFIER_CHAOS_STATE_DIR", str(ROOT / ".state" / "chaos-clients"))


@pytest.mark.parametrize("client", ["java", "librdkafka"])
def test_quick_profile_on_another_client_keeps_every_promise(tmp_path, client):
    if client == "java" and not jvm.java_generator_built():
        pytest.skip("the Java generator is not built: run `make setup`")
    if client == "librdkafka":
        pytest.importorskip("confluent_kafka")
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--client", client, "--profile", "quick",
                           "--seed", "1", "--out", str(tmp_path), "--base-port", BASE_PORT,
                           "--state-dir", STATE_DIR],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert f"client {client} {client_version(client)}" in proc.stdout
    matrix = orjson.loads((tmp_path / "verdict.json").read_bytes())
    cells = [v for row in matrix["grid"]["grid"].values() for v in row.values()]
    assert cells and set(cells) == {"PASS"}, matrix["grid"]
    assert {d["scenario"] for d in matrix["runs"]} == {"baseline", "ack-loss", "producer-kill"}
    for doc in matrix["runs"]:
        run = Path(doc["run_dir"])
        assert doc["clients"] == [f"{client} {client_version(client)}"]
        config = orjson.loads((run / "config.json").read_bytes())
        assert {p["client"] for p in config["producers"].values()} == {client}
        for line in doc["fault_summary"]:
            assert ": fired" in line, line
        for pid in config["producers"]:
            h = read_history(run / "histories" / f"{pid}.jsonl")
            sessions = [e for e in h.events if e["type"] == "session"]
            assert sessions and {s["client"] for s in sessions} == {client}
        if doc["scenario"] == "producer-kill" and client == "java":  # librdkafka: no ids
            h = read_history(run / "histories" / "transactional-0.jsonl")
            assert h.sessions[:2] == [1, 2], "killed and restarted"
            ids = [(e["ses"], e["producer_id"], e["epoch"]) for e in h.events
                   if e["type"] == "producer-id"]
            last_1 = [i for i in ids if i[0] == 1][-1]
            first_2 = next(i for i in ids if i[0] == 2)
            assert first_2[1] == last_1[1] and first_2[2] > last_1[2], ids


APP_PROPERTIES = """\
# a real Java application's producer.properties, unchanged
bootstrap.servers=kafka-1.example:9092,kafka-2.example:9092
key.serializer=org.apache.kafka.common.serialization.StringSerializer
value.serializer=org.apache.kafka.common.serialization.StringSerializer
acks=all
enable.idempotence=true
compression.type=lz4
linger.ms=10
client.id=orders-app
metadata.max.age.ms=60000
"""


def test_a_java_applications_properties_run_unchanged_on_java(tmp_path):
    if not jvm.java_generator_built():
        pytest.skip("the Java generator is not built: run `make setup`")
    props = tmp_path / "producer.properties"
    props.write_text(APP_PROPERTIES)
    scenario = tmp_path / "short-baseline.toml"
    scenario.write_text('description = "baseline, short"\n\n[workload]\n'
                        'modes = ["idempotent"]\nduration_s = 8\nrate = 100\n')
    verifier = Path(sys.executable).with_name("verifier")
    out = tmp_path / "out"
    proc = subprocess.run([str(verifier), "chaos", "--client", "java", "--scenario",
                           str(scenario), "--producer-config", str(props), "--out", str(out),
                           "--base-port", BASE_PORT, "--state-dir", STATE_DIR],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "claims: idempotent" in proc.stdout
    for key in ("bootstrap.servers", "key.serializer", "value.serializer"):
        assert f"your producer config: {key}: replaced by" in proc.stdout, key
    matrix = orjson.loads((out / "verdict.json").read_bytes())
    (doc,) = matrix["runs"]
    verdicts = {c["name"]: c["verdict"] for c in doc["columns"]}
    assert verdicts == {"idempotent": "PASS", "user:producer.properties": "PASS"}, verdicts
    config = orjson.loads((Path(doc["run_dir"]) / "config.json").read_bytes())
    assert config["producers"]["user-0"]["client"] == "java"
    assert config["producers"]["user-0"]["overrides"]["compression.type"] == "lz4"
    assert sum("replaced by" in n for n in config["notes"]) == 3, config["notes"]
    log = (Path(doc["run_dir"]) / "logs" / "user-0.log").read_text()
    assert "lz4" in log and "orders-app" in log, log[-3000:]
