"""Every broker line the cluster manager claims: format, start, a transactional round trip
at both isolation levels, restart on the same data, the round trip's records still there.

One single-node cluster per version, on its own ports (base port slot "versions" of
tests/conftest.py) and folder, one after the other. The versions are
VERIFIER_TEST_KAFKA_VERSIONS (default: one release of each line the issue names, 3.3 to
4.1, but 3.5: tests/integration/orchestration/test_known_bug_run.py formats and starts a
3.5.2 cluster and runs transactions at both isolation levels on it); a version's jars are
resolved from Maven Central on first use into .jars/broker-<version>."""

from __future__ import annotations

import os
import time

import pytest
from kafka import KafkaProducer

from tests.conftest import TEST_STATE_DIR, port_base
from tests.integration.producers.helpers import read_log
from verifier.harness.cluster import ClusterSpec, LocalCluster, up
from verifier.harness.topics import create_topics
from verifier.rundata import jvm

pytestmark = pytest.mark.integration

VERSIONS = jvm.parse_kafka_versions(
    os.environ.get("VERIFIER_TEST_KAFKA_VERSIONS", "3.3.2,3.6.2,3.9.1,4.1.1"))
BASE_PORT = port_base("versions")


def _read(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Every value of ``topic`` at ``isolation``, read up to that level's end offsets (a
    consumer that stops after 2 s without a record read nothing on a loaded machine)."""
    return sorted(v for _, _, v in read_log(bootstrap, topic, isolation, decode=bytes))


def _round_trip(bootstrap: str, topic: str, tag: str) -> tuple[list[bytes], list[bytes]]:
    """One committed and one aborted transaction over two partitions; what each
    isolation level must then show."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"versions-{tag}",
                             enable_idempotence=True, transaction_timeout_ms=10000)
    try:
        producer.init_transactions()
        committed = [f"{tag}-committed-{i}".encode() for i in range(6)]
        aborted = [f"{tag}-aborted-{i}".encode() for i in range(6)]
        producer.begin_transaction()
        for i, value in enumerate(committed):
            producer.send(topic, value, partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i, value in enumerate(aborted):
            producer.send(topic, value, partition=i % 2)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()
    return sorted(committed), sorted(committed + aborted)


@pytest.mark.parametrize("version", VERSIONS)
def test_version_formats_starts_restarts(version: str, record_property):
    state = TEST_STATE_DIR.parent / f"{TEST_STATE_DIR.name}-kafka-{version}"
    spec = ClusterSpec(nodes=1, base_port=BASE_PORT, heap_mb=384, kafka_version=version)
    t0 = time.monotonic()
    jvm.resolve(jvm.broker_jars(version))
    t1 = time.monotonic()
    cluster, action = up(state, spec, timeout=120)
    t2 = time.monotonic()
    try:
        assert action in ("started", "restarted stale")
        assert LocalCluster.load(state).spec.kafka_version == version  # recorded in cluster.json
        # the broker runs the requested release, and its logging works (Log4j 1 on 3.x)
        assert f"Kafka version: {version}" in cluster.log_file(1).read_text(errors="replace")
        bs = cluster.bootstrap_servers
        topic = "t-versions"
        create_topics(bs, {topic: 2}, replication_factor=1)
        committed, everything = _round_trip(bs, topic, "before")
        assert _read(bs, topic, "read_committed") == committed
        assert _read(bs, topic, "read_uncommitted") == everything

        t3 = time.monotonic()
        cluster.restart_node(1, timeout=120)
        t4 = time.monotonic()
        # same data after the restart, and transactions still work on it
        committed2, everything2 = _round_trip(bs, topic, "after")
        assert _read(bs, topic, "read_committed") == sorted(committed + committed2)
        assert _read(bs, topic, "read_uncommitted") == sorted(everything + everything2)
    finally:
        cluster.down()
    timings = {"resolve_s": round(t1 - t0, 1), "format_and_start_s": round(t2 - t1, 1),
               "restart_s": round(t4 - t3, 1)}
    record_property("timings", timings)
    print(f"\nKafka {version}: {timings}")
