"""The local cluster is real: 3 KRaft nodes, transactions, node crashes and pauses."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer

from verifier.harness.cluster import LocalCluster
from verifier.harness.topics import create_topics, partition_states, wait_in_sync

pytestmark = pytest.mark.integration


def _read_all(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, isolation_level=isolation,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=4000)
    try:
        return sorted(m.value for m in consumer)
    finally:
        consumer.close()


def test_three_nodes_all_live(cluster: LocalCluster):
    assert [s.state for s in cluster.status()] == ["running"] * 3
    assert cluster.bootstrap_servers.count(",") == 2


@pytest.fixture(scope="module")
def txn_topic(cluster: LocalCluster) -> dict:
    """One committed and one aborted transaction across the 3 partitions."""
    topic = "t-cluster-txn"
    create_topics(cluster.bootstrap_servers, {topic: 3}, replication_factor=3)
    states = partition_states(cluster.bootstrap_servers, [topic])
    assert all(s["replicas"] == [1, 2, 3] for s in states.values())
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             transactional_id="it-cluster-txn", enable_idempotence=True,
                             transaction_timeout_ms=10000)
    producer.init_transactions()
    committed = [f"committed-{i}".encode() for i in range(9)]
    aborted = [f"aborted-{i}".encode() for i in range(9)]
    producer.begin_transaction()
    for i, value in enumerate(committed):
        producer.send(topic, value, partition=i % 3)
    producer.commit_transaction()
    producer.begin_transaction()
    for i, value in enumerate(aborted):
        producer.send(topic, value, partition=i % 3)
    producer.flush()
    producer.abort_transaction()
    producer.close()
    return {"topic": topic, "committed": sorted(committed), "all": sorted(committed + aborted)}


def test_read_committed_sees_only_committed(cluster: LocalCluster, txn_topic: dict):
    bs = cluster.bootstrap_servers
    assert _read_all(bs, txn_topic["topic"], "read_committed") == txn_topic["committed"]
    assert _read_all(bs, txn_topic["topic"], "read_uncommitted") == txn_topic["all"]


def test_spark_batch_read_matches_consumers(cluster: LocalCluster, txn_topic: dict, spark):
    for isolation, expected in (("read_committed", txn_topic["committed"]),
                                ("read_uncommitted", txn_topic["all"])):
        df = (spark.read.format("kafka")
              .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", txn_topic["topic"])
              .option("kafka.isolation.level", isolation)
              .load())
        got = sorted(bytes(r.value) for r in df.select("value").collect())
        assert got == expected, isolation


def test_kill_node_then_restart(cluster: LocalCluster, topic_name: str):
    bs = cluster.bootstrap_servers
    create_topics(bs, {topic_name: 3}, replication_factor=3)
    victim = 2
    cluster.kill_node(victim)
    assert cluster.node_state(victim) == "dead"
    try:
        # RF 3, min ISR 2: acks=all keeps working with one node down.
        producer = KafkaProducer(bootstrap_servers=bs, acks="all", enable_idempotence=True,
                                 request_timeout_ms=10000, delivery_timeout_ms=60000)
        futures = [producer.send(topic_name, f"v{i}".encode(), partition=i % 3) for i in range(30)]
        offsets = [f.get(timeout=60).offset for f in futures]
        producer.close()
        assert len(offsets) == 30
    finally:
        cluster.start_node(victim)
        cluster.wait_ready()
    assert [s.state for s in cluster.status()] == ["running"] * 3
    wait_in_sync(bs, [topic_name], timeout=120)
    assert len(_read_all(bs, topic_name, "read_uncommitted")) == 30


def test_pause_and_resume_node(cluster: LocalCluster, topic_name: str):
    bs = cluster.bootstrap_servers
    create_topics(bs, {topic_name: 3}, replication_factor=3)
    cluster.pause_node(3)
    try:
        assert cluster.node_state(3) == "paused"
        assert 3 not in cluster.live_nodes()
    finally:
        cluster.resume_node(3)
    cluster.wait_ready()
    wait_in_sync(bs, [topic_name], timeout=120)
    assert cluster.live_nodes() == [1, 2, 3]
