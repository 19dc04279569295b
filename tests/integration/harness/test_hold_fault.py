"""The hold fault on a real broker: a transactional Produce is held by the proxy, the
client retries and commits, and the held original reaches the broker only after its
transaction's EndTxn response passed; the nemesis history shows the hold, the release
and the broker's answer, each with the request's identity.

Its own one-node cluster (Kafka 4.1.1, base port slot "hold" of tests/conftest.py) behind its own
proxy, so the shared three-node cluster's proxy keeps no rule of this test.
"""

from __future__ import annotations

import json
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer

from tests.conftest import TEST_STATE_DIR, port_base
from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.faults.kinds import FaultEnv
from verifier.harness.faults.nemesis import Nemesis
from verifier.harness.faults.proxy_process import ProxyProcess, proxied
from verifier.harness.faults.spec import build_schedule, parse_spec
from verifier.harness.topics import create_topics
from verifier.rundata.nemesis import read_nemesis
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

BASE = port_base("hold")


@pytest.fixture(scope="module")
def held_cluster():
    spec = proxied(ClusterSpec(nodes=1, base_port=BASE, heap_mb=384, kafka_version="4.1.1"))
    proxy = ProxyProcess(spec, TEST_STATE_DIR.parent / f"{TEST_STATE_DIR.name}-hold-proxy")
    proxy.start()
    try:
        cluster, _ = up(TEST_STATE_DIR.parent / f"{TEST_STATE_DIR.name}-hold", spec,
                        timeout=120)
        try:
            yield cluster, proxy.client
        finally:
            cluster.down()
    finally:
        proxy.stop()


def _read(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, isolation_level=isolation,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=2000)
    try:
        return [m.value for m in consumer]
    finally:
        consumer.close()


@pytest.mark.parametrize("client_view", ["reset", "timeout"])
def test_held_produce_released_after_end_txn_response(held_cluster, tmp_path, client_view):
    cluster, proxy = held_cluster
    bs = cluster.bootstrap_servers
    topic, txn = f"t-hold-{client_view}", f"hold-{client_view}"
    create_topics(bs, {topic: 2}, replication_factor=1)
    producer = KafkaProducer(bootstrap_servers=bs, transactional_id=txn,
                             enable_idempotence=True, request_timeout_ms=3000,
                             retry_backoff_ms=100, linger_ms=0)
    producer.init_transactions()
    producer.partitions_for(topic)  # metadata before the hold: only data is held

    fault = parse_spec({"kind": "hold", "target": {"all": True}, "start": 0, "duration": 60,
                        "params": {"transactional_id": txn, "partition": 1,
                                   "client_view": client_view,
                                   "release_on": {"api_key": 26, "direction": "response",
                                                  "transactional_id": "same"}}}, "test")
    history = tmp_path / "nemesis.jsonl"
    with Nemesis(build_schedule([fault], seed=1, run_seconds=60),
                 FaultEnv(bootstrap_servers=bs, proxy=proxy), history, "hold-run") as nem:
        wait_until(lambda: (any(r["kind"] == "hold" for r in proxy.status()["rules"]), None),
                   timeout=10, what="the hold rule", expected="set")
        producer.begin_transaction()
        producer.send(topic, b"p0", partition=0)
        future = producer.send(topic, b"p1", partition=1)  # held, then retried
        producer.commit_transaction()
        committed_at = int(time.time() * 1000)
        meta = future.get(timeout=1)
        # the broker's answer to the released original, copied by the nemesis' poller
        wait_until(lambda: (any(op.get("f") == "answer" for op in read_nemesis(history)),
                            None), timeout=20, what="the released request's answer",
                   expected="an answer event in the history")
        assert not nem.errors
    producer.close()

    ops = read_nemesis(history, "hold-run")
    events = {op["f"]: op for op in ops if op["type"] == "event"}
    assert set(events) == {"hold", "release", "answer"}, json.dumps(ops, indent=1)
    hold, release, answer = events["hold"], events["release"], events["answer"]
    start = next(op for op in ops if op["f"] == "start" and op["type"] == "ok")
    assert hold["fault"] == "hold" and hold["id"] == start["id"] == release["id"]
    # the request's identity: the transactional Produce of p1 to partition 1
    request = hold["detail"]["request"]
    assert request["api"] == "Produce" and request["transactional_id"] == txn
    # (kafka-python may carry p0 in the same request)
    parts = {(p["topic"], p["partition"], p["base_sequence"]) for p in request["partitions"]}
    assert (topic, 1, 0) in parts and parts <= {(topic, 0, 0), (topic, 1, 0)}
    assert release["detail"]["request"] == request == answer["detail"]["request"]
    assert hold["detail"]["client_view"] == client_view
    # released by the EndTxn (commit) response of the same transactional id, after the
    # client's commit returned, on the connection it was held on
    trigger = release["detail"]["trigger"]
    assert (trigger["api"], trigger["direction"], trigger["transactional_id"],
            trigger["committed"]) == ("EndTxn", "response", txn, True)
    assert release["detail"]["reason"] == "EndTxn response" and release["detail"]["delivered"]
    assert hold["t"] <= release["t"] <= committed_at + 1000
    assert release["detail"]["held_ms"] >= 0 and release["t"] > hold["t"]
    # the late original reached the broker and was answered (4.1.1: not written again)
    written = answer["detail"]["response"]["partitions"]
    assert {(w[0], w[1]) for w in written} == {(t, p) for t, p, _ in parts}
    print(json.dumps(answer["detail"]["response"]))
    assert answer["detail"]["to_client"] is False  # its client was gone
    # the retry of p1 was the one written; the transaction committed exactly once
    assert meta.partition == 1
    assert sorted(_read(bs, topic, "read_committed")) == [b"p0", b"p1"]
    assert sorted(_read(bs, topic, "read_uncommitted")) == [b"p0", b"p1"]
