"""Process faults on the real cluster, driven by the nemesis from a spec."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer

from verifier.harness.faults.kinds import FaultEnv
from verifier.harness.faults.nemesis import Nemesis
from verifier.harness.faults.spec import build_schedule, parse_spec
from verifier.harness.faults.targets import resolve_broker
from verifier.harness.topics import create_topics, end_offsets, partition_states, wait_in_sync
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration


def test_kill_partition_leader_moves_leadership_and_recovers(cluster, proxies, topic_name,
                                                             tmp_path):
    bs = cluster.bootstrap_servers
    create_topics(bs, {topic_name: 3}, replication_factor=3)
    producer = KafkaProducer(bootstrap_servers=bs, acks="all", enable_idempotence=True)
    for i in range(30):
        producer.send(topic_name, f"v{i}".encode(), partition=i % 3)
    producer.flush()
    producer.close()
    leader = partition_states(bs, [topic_name])[(topic_name, 0)]["leader"]
    old_pid = cluster.pids[leader]
    spec = parse_spec({"kind": "broker-kill",
                       "target": {"leader": {"topic": topic_name, "partition": 0}},
                       "start": 0, "duration": 60}, "test", node_ids=cluster.spec.node_ids)
    schedule = build_schedule([spec], seed=3, run_seconds=120)
    history = tmp_path / "nemesis.jsonl"
    env = FaultEnv(bs, cluster=cluster, proxy=proxies)
    with Nemesis(schedule, env, history, "it-run"):
        wait_until(lambda: (cluster.node_state(leader) == "dead", cluster.node_state(leader)),
                   timeout=30, what=f"node {leader} killed", expected="dead")
        moved = wait_until(
            lambda: (lambda s: (s["leader"] not in (-1, leader), s))(
                partition_states(bs, [topic_name])[(topic_name, 0)]),
            timeout=60, what="leadership to move", expected=f"a leader other than {leader}")
        assert leader not in moved["isr"]
    # leaving the block healed it early (heal-all): restarted on its own data
    assert cluster.node_state(leader) == "running" and cluster.pids[leader] != old_pid
    wait_in_sync(bs, [topic_name], timeout=120)
    assert sum(end_offsets(bs, [topic_name], "read_uncommitted").values()) == 30
    events = [json.loads(x) for x in history.read_text().splitlines()]
    assert [(e["type"], e["f"], e["fault"]) for e in events[1:]] == [
        ("invoke", "start", "broker-kill"), ("ok", "start", "broker-kill"),
        ("invoke", "heal", "broker-kill"), ("ok", "heal", "broker-kill"),
        ("invoke", "heal", "all"), ("ok", "heal", "all")]
    assert events[2]["detail"]["node"] == leader and events[2]["id"] == events[4]["id"] == 1


def test_transaction_coordinator_target(cluster):
    bs = cluster.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bs, transactional_id="it-faults-coord")
    try:
        producer.init_transactions()
        node = resolve_broker({"coordinator": {"transactional_id": "it-faults-coord"}}, bs)
    finally:
        producer.close()
    assert node in cluster.spec.node_ids
