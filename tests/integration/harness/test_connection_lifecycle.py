"""What a kafka-python producer does with its TCP connections, measured from the fault
proxy's connection log: connections at construction, the idle close after
``connections_max_idle_ms``, the re-open on the next send (the seeds' claims, checked
for the client this tool runs)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer

from tests.conftest import TEST_BASE_PORT, TEST_STATE_DIR
from verifier.harness.topics import create_topics
from verifier.report.connections import render_connections, summarize
from verifier.rundata.connections import ConnectionLog, fold
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

IDLE_MS = 3000


def _log() -> Path:
    return TEST_STATE_DIR.parent / f"test-proxy-{TEST_BASE_PORT}" / "connections.jsonl"


def _rows(offset: int, client_id: str) -> list[dict]:
    import json

    with open(_log(), "rb") as f:
        f.seek(offset)
        lines = f.read().splitlines()
    rows = [json.loads(x) for x in lines if x.strip()]
    return [r for r in rows if r.get("client_id") == client_id]


def test_kafka_python_producer_connection_lifecycle(cluster, bootstrap, topic_name, tmp_path):
    create_topics(bootstrap, {topic_name: 1}, replication_factor=3)
    offset = _log().stat().st_size
    cid = f"verifier.test.{uuid.uuid4().hex[:8]}"
    t_built = int(time.time() * 1000)
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=cid, acks="all",
                             connections_max_idle_ms=IDLE_MS)
    try:
        def started():  # the node connection is open and the bootstrap one closed again
            conns = fold(_rows(offset, cid))[0]
            return any(c.closed for c in conns) and any(not c.closed for c in conns), conns

        built = wait_until(started, timeout=30, what="the producer's start-up connections",
                           expected="a bootstrap connection opened and closed",
                           describe=lambda c: f"{len(c)} connections")
        # measured (kafka-python 3.0.12): construction opens two connections, not one per
        # bootstrap server as the seeds say the Java producer does: a bootstrap connection
        # that carries ApiVersions + Metadata and is closed by the client once the metadata
        # is in, and the node connection (InitProducerId: idempotence is on by default),
        # to the same broker or another one (kafka-python picks the least loaded node)
        assert len(built) == 2, [c.to_json() for c in built]
        assert all(c.opened >= t_built for c in built)
        boot = [c for c in built if c.metadata_only]
        assert len(boot) == 1 and boot[0].by == "client", [c.to_json() for c in built]
        node = [c for c in built if c not in boot]
        assert len(node) == 1 and node[0].closed is None  # what it carried: at its close

        t_send = int(time.time() * 1000)
        producer.send(topic_name, b"first").get(timeout=30)
        leader_opens = [r for r in _rows(offset, cid) if r["event"] == "open"
                        and r["t"] >= t_send]  # none if the leader is that same broker

        # idle: every connection closed by the client once quiet for connections_max_idle_ms
        def all_closed():
            rows = _rows(offset, cid)
            opens = {r["conn"] for r in rows if r["event"] == "open"}
            closes = {r["conn"] for r in rows if r["event"] == "close"}
            return opens <= closes, sorted(opens - closes)

        wait_until(all_closed, timeout=IDLE_MS / 1000 * 4, what="the idle closes",
                   expected="every connection closed by the client", interval=0.2)
        t_resend = int(time.time() * 1000)
        producer.send(topic_name, b"second").get(timeout=30)
    finally:
        producer.close(timeout=10)
    # what a connection carried is logged at its close, which the proxy sees after ours
    wait_until(all_closed, timeout=30, what="the proxy's close lines",
               expected="every connection of the closed producer closed")
    rows = _rows(offset, cid)
    conns, orphans = fold(rows)
    assert orphans == 0
    first = [c for c in conns if c.opened < t_resend and not c.metadata_only]
    assert first and all(c.by == "client" for c in first)
    for c in first:  # closed after the configured idle time, not much later (the client
        # checks idleness in its poll loop, which a loaded 2-core machine delays)
        assert IDLE_MS <= c.closed - c.last_t <= IDLE_MS + 5000, c.to_json()
    assert 22 in next(c for c in conns if c.conn == node[0].conn).api  # InitProducerId
    reopened = [c for c in conns if c.opened >= t_resend]
    assert reopened and any(c.purpose == "produce" for c in reopened)
    section = summarize(ConnectionLog(2, conns, max(r["t"] for r in rows)), [])
    assert section["findings"] == []
    text = render_connections(section)
    print(f"\nconstruction: {len(built)} connection(s); first send opened "
          f"{len(leader_opens)} more\n{text}")
    capture = os.environ.get("VERIFIER_CAPTURE_CONNECTIONS")
    if capture:  # how tests/unit/report/fixtures/connections-idle-producer.jsonl was made
        import json

        head = {"type": "header", "format": "proxy-connections", "version": 2}
        Path(capture).write_text("".join(json.dumps(r) + "\n" for r in [head, *rows]))
