"""`verifier advise` checked by real runs (issue 37).

First, without a cluster: the advisor on every preset mode and pipeline and on five
real-world configuration files written from the clients' documentation. The short run of
the scenario the advice names for each file is in the chaos tier
(tests/chaos/test_advise_runs.py: minutes each, not part of `make test`).

Runs on VERIFIER_ADVISE_BASE_PORT (default 26700), VERIFIER_ADVISE_STATE_DIR
(.state/advise) and VERIFIER_ADVISE_OUT (runs/advise).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.cli.advise_targets import PIPELINE_SINKS
from verifier.rundata.vocab import MODES

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
BASE_PORT = os.environ.get("VERIFIER_ADVISE_BASE_PORT", "26700")
STATE_DIR = os.environ.get("VERIFIER_ADVISE_STATE_DIR", str(ROOT / ".state" / "advise"))
OUT = Path(os.environ.get("VERIFIER_ADVISE_OUT", str(ROOT / "runs" / "advise")))

#: name -> (text, client, predicted mode, (fault class, kind it names), scenario)
FILES = {
    # a throughput-tuned producer from before KIP-679: leader acks, a few retries
    "acks1-retries": ("bootstrap.servers=kafka:9092\nacks=1\nretries=3\nlinger.ms=20\n"
                      "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n",
                      "kafka-python", None, ("lost ack", "duplicate-same-session"),
                      "ack-loss"),
    # relying on the 3.x default idempotence while raising in-flight requests to 6
    "idempotence-inflight6": ("bootstrap.servers=kafka:9092\nacks=all\n"
                              "max.in.flight.requests.per.connection=6\n",
                              "kafka-python", "at-least-once",
                              ("lost ack", "duplicate-same-session"), "ack-loss"),
    # a transactional id with idempotence switched off: every client refuses it
    "txn-without-idempotence": ("bootstrap.servers=kafka:9092\ntransactional.id=orders-tx\n"
                                "enable.idempotence=false\n", "kafka-python", None, None, None),
    # a confluent-kafka application on librdkafka's defaults
    "librdkafka-defaults": ("bootstrap.servers=kafka:9092\nclient.id=orders-service\n",
                            "librdkafka", "at-least-once",
                            ("lost ack", "duplicate-same-session"), "ack-loss"),
    # Spark's Kafka source on its defaults: no kafka.isolation.level
    "spark-source": ("kafka.bootstrap.servers=kafka:9092\nsubscribe=orders\n"
                     "startingOffsets=earliest\n", "kafka-python",
                     "transactional@read_uncommitted", ("no fault", "aborted-read"),
                     "baseline"),
}


def _advise(*argv) -> tuple[int, list[dict]]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["advise", *argv, "--format", "json"])
    return code, json.loads(buf.getvalue())["configurations"]


def test_every_preset_mode_and_pipeline():
    code, entries = _advise(*MODES, *PIPELINE_SINKS)
    assert code == 0
    got = {e["file"]: e["advice"]["mode"] for e in entries}
    assert got == {**{m: m for m in MODES},
                   "kafka-sink": "pipeline/at-least-once", "file": "pipeline/exactly-once",
                   "delta": "pipeline/exactly-once", "foreach-batch": "pipeline/at-least-once",
                   "foreach-batch-idempotent": "pipeline/exactly-once",
                   "postgres-upsert": "pipeline/exactly-once",
                   "postgres-append": "pipeline/at-least-once",
                   "dedup-state": "pipeline/exactly-once"}


def _file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.properties"
    path.write_text(FILES[name][0])
    return path


@pytest.mark.parametrize("name", sorted(FILES))
def test_five_real_world_files(tmp_path, name):
    _, client, mode, hazard, scenario = FILES[name]
    code, (entry,) = _advise(str(_file(tmp_path, name)), "--client", client)
    advice = entry["advice"]
    assert advice["mode"] == mode, advice["guarantee"]
    assert entry["findings"] == [], entry["findings"]  # the client agrees with the table
    if hazard is None:
        assert code == 1 and entry["check"]["ok"] is False and advice["refused"]
        return
    fault = next(f for f in advice["faults"] if f["fault"] == hazard[0])
    assert hazard[1] in fault["kinds"] and fault["scenario"] == scenario
