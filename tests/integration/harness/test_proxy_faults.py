"""The fault proxy against the real cluster: ack loss, latency, blackhole, bad frames."""

from __future__ import annotations

import collections
import json
import socket
import struct

import kafka.errors as KE
import pytest
from kafka import KafkaConsumer, KafkaProducer

from producers.outcomes import Outcome, classify
from verifier.harness.faults.control import ProxyClient
from verifier.harness.topics import create_topics, partition_states

pytestmark = pytest.mark.integration

# Short request timeout so a swallowed response costs 2 s, not 30; delivery timeout
# must be >= linger.ms + request.timeout.ms, and leaves room for retries.
FAST = {"request_timeout_ms": 2000, "delivery_timeout_ms": 30000, "linger_ms": 0,
        "retry_backoff_ms": 100, "acks": "all", "retries": 10}


def _producer(bootstrap: str, idempotent: bool, **extra) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=idempotent,
                         max_in_flight_requests_per_connection=5,
                         **{**FAST, **extra})


def _offsets_by_value(bootstrap: str, topic: str) -> dict[bytes, list[int]]:
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=4000)
    seen: dict[bytes, list[int]] = collections.defaultdict(list)
    try:
        for m in consumer:
            seen[m.value].append(m.offset)
    finally:
        consumer.close()
    return seen


def _leader(bootstrap: str, topic: str) -> int:
    return partition_states(bootstrap, [topic])[(topic, 0)]["leader"]


@pytest.mark.parametrize("action", ["drop", "close"])
@pytest.mark.parametrize("idempotent", [False, True], ids=["at-least-once", "idempotent"])
def test_ack_loss(bootstrap, proxies: ProxyClient, topic_name, action, idempotent):
    """Responses lost after the append: at-least-once duplicates, idempotent does not,
    and every extra copy corresponds to one response the proxy lost."""
    create_topics(bootstrap, {topic_name: 1}, replication_factor=3)
    producer = _producer(bootstrap, idempotent)
    producer.send(topic_name, b"warm-up").get(timeout=30)  # metadata and connection ready
    before = proxies.totals()
    rule = proxies.add_rule(kind="drop_response", broker=_leader(bootstrap, topic_name),
                            next=3, action=action)
    values = [f"r{i}".encode() for i in range(20)]
    for v in values:  # one at a time: each lost response is one batch of one record
        producer.send(topic_name, v).get(timeout=60)
    producer.close()
    removed = proxies.remove_rule(rule["id"])
    after = proxies.totals()
    key = "responses_dropped" if action == "drop" else "closed_after_append"
    assert removed["hits"] == 3
    assert after.get(key, 0) - before.get(key, 0) == 3

    seen = _offsets_by_value(bootstrap, topic_name)
    assert set(values) <= set(seen)
    extra = sum(len(offsets) - 1 for offsets in seen.values())
    if idempotent:
        assert extra == 0, {v: o for v, o in seen.items() if len(o) > 1}
    else:
        assert extra == 3, {v: o for v, o in seen.items() if len(o) > 1}
        assert any(len(o) >= 2 for o in seen.values())


@pytest.mark.parametrize("rule", [{"kind": "blackhole"},
                                  {"kind": "latency", "ms": 3000, "direction": "downstream"}],
                         ids=["blackhole", "latency"])
def test_window_gives_info_outcomes_then_heals(bootstrap, proxies, topic_name, rule):
    create_topics(bootstrap, {topic_name: 1}, replication_factor=3)
    producer = _producer(bootstrap, True, request_timeout_ms=1000, delivery_timeout_ms=2500,
                         retries=2)
    try:
        producer.send(topic_name, b"before").get(timeout=30)
        before = proxies.totals()
        r = proxies.add_rule(broker=_leader(bootstrap, topic_name), **rule)
        with pytest.raises(KE.KafkaError) as err:
            producer.send(topic_name, b"during").get(timeout=30)
        assert classify(err.value, "send") == Outcome.INFO, repr(err.value)
        healed = proxies.remove_rule(r["id"])
        assert healed["hits"] > 0
        key = "frames_blackholed" if rule["kind"] == "blackhole" else "frames_delayed"
        assert proxies.totals()[key] > before.get(key, 0)
    finally:
        producer.close(timeout=1)
    # healed: a new producer (a restarted generator) gets through at once
    after = _producer(bootstrap, True)
    try:
        assert after.send(topic_name, b"after").get(timeout=30).offset >= 1
    finally:
        after.close(timeout=5)


def test_acks0_requests_expect_no_response(bootstrap, proxies, topic_name):
    """acks=0 produce requests get no response; pairing must not shift onto later ones."""
    create_topics(bootstrap, {topic_name: 1}, replication_factor=3)
    fire = _producer(bootstrap, False, acks=0, retries=0)
    for i in range(50):
        fire.send(topic_name, f"a{i}".encode())
    fire.flush()
    fire.close()
    # a drop rule on Produce must now hit exactly the acks=all response, not metadata
    rule = proxies.add_rule(kind="drop_response", next=1, action="close")
    producer = _producer(bootstrap, False)
    producer.send(topic_name, b"acked").get(timeout=60)
    producer.close()
    assert proxies.remove_rule(rule["id"])["hits"] == 1
    assert len(_offsets_by_value(bootstrap, topic_name)) == 51


def test_malformed_frame_closes_only_that_connection(cluster, proxies, topic_name):
    port = cluster.spec.proxy_port(1)
    before = proxies.status()["brokers"]["1"]["counters"].get("malformed", 0)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as bad:
        bad.sendall(struct.pack(">i", 2**31 - 1) + b"garbage")  # size far beyond the cap
        assert bad.recv(10) == b""  # the proxy closed it
    with socket.create_connection(("127.0.0.1", port), timeout=5) as bad:
        bad.sendall(struct.pack(">i", 6) + b"\x00\x00\x00")  # partial: proxy waits
        bad.sendall(b"\x00\x00\x01")  # now whole, but too short for a request header
        assert bad.recv(10) == b""
    assert proxies.status()["brokers"]["1"]["counters"]["malformed"] == before + 2
    # everyone else is still served
    create_topics(cluster.bootstrap_servers, {topic_name: 1}, replication_factor=3)
    log = cluster.state_dir.parent / f"test-proxy-{cluster.spec.base_port}" / "connections.jsonl"
    closes = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    reasons = [c["reason"] for c in closes if c["event"] == "close"]
    assert sum(r.startswith("malformed request") for r in reasons) >= 2
    clients = {c["client_id"] for c in closes if c["event"] == "open"}
    assert any(c and c.startswith("kafka-python") for c in clients)
