"""compose/docker-compose.yml starts the locally built image: three brokers up, a
transaction committed, one aborted, each read back at read_committed and
read_uncommitted; afterwards nothing of the project is left on the engine."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.containers.conftest import PORTS, leftovers
from verifier.harness.containers.image import kafka_image
from verifier.harness.kafka_wire import metadata_brokers
from verifier.harness.topics import create_topics
from verifier.rundata import jvm
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.containers

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"
PROJECT = "verifier-compose"
PROJECT_LABEL = f"com.docker.compose.project={PROJECT}"


def read_back(bootstrap: str, topic: str, isolation: str) -> dict[int, list[bytes]]:
    """Every value of ``topic`` per partition at ``isolation``, up to its end offsets."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in range(3)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)  # at read_committed: the last stable offset
        got: dict[int, list[bytes]] = {p: [] for p in range(3)}

        def read():
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += [r.value for r in records]
            done = all(consumer.position(tp) >= end[tp] for tp in parts)
            return done, {tp.partition: consumer.position(tp) for tp in parts}

        wait_until(read, timeout=60, what=f"{topic} read at {isolation}",
                   expected=f"positions at the end offsets {end}", interval=0)
        return got
    finally:
        consumer.close()


def test_compose_file_brings_up_the_image_and_a_transaction_round_trips(docker_client):
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("docker-compose is not installed (compose/docker-engine.sh installs it "
                    "with the private engine)")
    version = jvm.kafka_version()
    kafka_image(docker_client, version)  # the image the file names
    ports = [PORTS["compose"] + n for n in (1, 2, 3)]
    env = {**os.environ, "KAFKA_VERSION": version,
           **{f"KAFKA{n}_PORT": str(p) for n, p in zip((1, 2, 3), ports, strict=True)}}
    cmd = [compose, "-f", str(COMPOSE_FILE), "-p", PROJECT]
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    try:
        subprocess.run([*cmd, "up", "-d"], env=env, check=True, capture_output=True,
                       text=True, timeout=300)

        def brokers():
            seen = {}
            for p in ports:
                try:
                    seen[p] = sorted(b.node_id for b in metadata_brokers("127.0.0.1", p))
                except OSError as exc:
                    seen[p] = type(exc).__name__
            return all(v == [1, 2, 3] for v in seen.values()), seen

        wait_until(brokers, timeout=240, what="the compose brokers",
                   expected="each lists brokers 1, 2, 3", interval=1)
        create_topics(bootstrap, {"round-trip": 3}, 3)
        producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="round-trip",
                                 acks="all", enable_idempotence=True)
        try:
            producer.init_transactions()
            producer.begin_transaction()
            for i in range(30):
                producer.send("round-trip", f"committed-{i}".encode(), partition=i % 3)
            producer.commit_transaction()
            producer.begin_transaction()
            for i in range(9):
                producer.send("round-trip", f"aborted-{i}".encode(), partition=i % 3)
            producer.flush()
            producer.abort_transaction()
        finally:
            producer.close()
        committed = read_back(bootstrap, "round-trip", "read_committed")
        uncommitted = read_back(bootstrap, "round-trip", "read_uncommitted")
        for p in range(3):
            assert committed[p] == [f"committed-{i}".encode() for i in range(p, 30, 3)]
            assert uncommitted[p] == committed[p] + [f"aborted-{i}".encode()
                                                     for i in range(p, 9, 3)]
    finally:
        down = subprocess.run([*cmd, "down", "-v", "--remove-orphans"], env=env,
                              capture_output=True, text=True, timeout=300)
    assert down.returncode == 0, down.stderr[-2000:]
    assert leftovers(docker_client, PROJECT_LABEL) == []
