"""The wire codec's bridge to kafka-python's messages (verifier.harness.kafka_wire), on
recorded frames: what it does with versions kafka-python does not know, with bodies that
do not decode, and the requests it builds itself, byte for byte as a broker answered
them (tests/data/wire/log-kafka-4.1.1.json: the codec's own requests through
``tests/data/capture_wire.py``'s recorder, after both transactional sessions)."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from tests.unit.harness.test_hold import PRODUCE_V13
from verifier.harness import kafka_wire
from verifier.harness.kafka_wire import (
    API_API_VERSIONS,
    API_END_TXN,
    API_FETCH,
    API_LIST_OFFSETS,
    API_METADATA,
    FrameBuffer,
    WireError,
    decode_request_header,
    fetch_request,
    frame,
    list_offsets_request,
    not_kafka,
    parse_fetch,
    parse_list_offsets,
    request_identity,
    response_summary,
)

WIRE = Path(__file__).resolve().parents[2] / "data" / "wire"
LOG = WIRE / "log-kafka-4.1.1.json"
TOPIC = "t-wire"


def _exchanges() -> list[tuple[bytes, bytes]]:
    """(request, response) of each recorded exchange (one connection each)."""
    doc = json.loads(LOG.read_text())
    pending: dict[int, bytes] = {}
    out = []
    for f in doc["frames"]:
        payload = bytes.fromhex(f["hex"])
        if f["direction"] == "request":
            pending[f["conn"]] = payload
        else:
            out.append((pending.pop(f["conn"]), payload))
    return out


def _by_api(api_key: int) -> list[tuple[bytes, bytes]]:
    return [(q, a) for q, a in _exchanges() if decode_request_header(q).api_key == api_key]


def test_a_version_newer_than_kafka_pythons_is_read_as_its_newest():
    (payload,) = FrameBuffer().feed(bytes.fromhex(PRODUCE_V13))
    v14 = payload[:2] + struct.pack(">h", 14) + payload[4:]
    old, new = request_identity(payload), request_identity(v14)
    assert new.api_version == 14
    assert {**old.to_json(), "api_version": 14} == new.to_json()


def test_a_body_that_does_not_decode_is_a_wire_error():
    end_txn = next(bytes.fromhex(f["hex"]) for f in json.loads(
        (WIRE / "txn-kafka-python-kafka-4.1.1.json").read_text())["frames"]
        if f["direction"] == "request" and bytes.fromhex(f["hex"])[1] == API_END_TXN)
    assert request_identity(end_txn).committed is True
    with pytest.raises(WireError, match="EndTxnRequest"):
        request_identity(end_txn[:-6])  # cut inside the producer id
    with pytest.raises(WireError, match="ProduceResponse"):
        response_summary(struct.pack(">i", 5) + b"\x00\x00", 0, 9)


def test_the_requests_the_codec_builds_are_the_recorded_ones():
    lists, fetches = _by_api(API_LIST_OFFSETS), _by_api(API_FETCH)
    assert [q for q, _ in lists] == [list_offsets_request(1, "wire-log", TOPIC, p)
                                     for p in (0, 1)]
    assert [q for q, _ in fetches] == [fetch_request(2, "wire-log", TOPIC, p, 0, 100)
                                       for p in (0, 1)]
    (versions_request, _), = _by_api(API_API_VERSIONS)
    h = decode_request_header(versions_request)
    assert (h.api_version, h.correlation_id, h.client_id) == (0, 0x7E51, "verifier-probe")


def test_the_log_shows_each_sessions_transactions_and_markers():
    (fetch0, fetch1) = (parse_fetch(a, TOPIC, p) for p, (_, a) in enumerate(_by_api(API_FETCH)))
    (end0, end1) = (parse_list_offsets(a, TOPIC, p) for p, (_, a) in
                    enumerate(_by_api(API_LIST_OFFSETS)))
    for got, (error, end) in ((fetch0, end0), (fetch1, end1)):
        assert error == got.error_code == 0
        assert got.high_watermark == end == got.next_offset == got.last_stable_offset
    # per producer (kafka-python's session, then librdkafka's): partition 0 holds c0, the
    # commit marker, a0 and the abort marker; partition 1 c1 and the commit marker
    producers = list(dict.fromkeys(b.producer_id for b in fetch0.batches))
    assert len(producers) == 2
    for pid in producers:
        assert [b.marker for b in fetch0.batches if b.producer_id == pid] == \
            [None, "commit", None, "abort"]
        assert [b.marker for b in fetch1.batches if b.producer_id == pid] == [None, "commit"]
    assert all(b.transactional for b in fetch0.batches + fetch1.batches)
    offsets = [b.base_offset for b in fetch0.batches]
    assert offsets == sorted(offsets) and offsets[0] == 0


def test_metadata_of_the_recorded_broker(monkeypatch):
    answers = {q: a for q, a in _by_api(API_METADATA)}
    monkeypatch.setattr(kafka_wire.metadata, "ask",
                        lambda host, port, payload, timeout: answers[payload])
    (broker,) = kafka_wire.metadata_brokers("127.0.0.1", 1)
    assert broker.node_id == 1 and broker.port == json.loads(LOG.read_text())["listen"]
    parts = kafka_wire.metadata_partitions("127.0.0.1", 1, [TOPIC])
    assert sorted((p.topic, p.partition, p.leader, p.replicas, p.isr) for p in parts) == [
        (TOPIC, 0, 1, (1,), (1,)), (TOPIC, 1, 1, (1,), (1,))]


def test_not_kafka_on_the_recorded_answer_and_on_something_else():
    (_, answer), = _by_api(API_API_VERSIONS)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(frame(answer))
        ours.settimeout(1)
        assert not_kafka(ours) is None
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        ours.settimeout(1)
        assert not_kafka(ours).startswith("it replied b'HTTP/1.1")
