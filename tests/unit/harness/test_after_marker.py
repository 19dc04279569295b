"""``after_marker``: a held Produce is released only once its own transaction's marker is
in the partition's log, which the coordinator writes after it has answered EndTxn, between
brokers (KAFKA-14402's window: after the abort marker, before the producer's next step).

The proxy's own event loop in front of a stand-in broker on loopback (no Kafka), as in
test_then_hold: it answers the captured kafka-python frames, and answers the proxy's own
ListOffsets and Fetch requests from a log it is given: at first without the held
producer's marker, from MARKER_AFTER_S after the EndTxn answer with a commit marker of the
same producer, an abort marker of another producer, then the abort marker looked for.
"""

from __future__ import annotations

import asyncio
import struct
import time

import pytest

from tests.unit.harness.test_kafka_log import batch, fetch_response, list_offsets_response
from tests.unit.harness.test_then_hold import RULE, _frame, _frames, _free_port
from verifier.harness.faults.proxy import Proxy
from verifier.harness.faults.rules import Rule, RuleError
from verifier.harness.kafka_wire import (
    API_ADD_PARTITIONS_TO_TXN,
    API_END_TXN,
    API_FETCH,
    API_LIST_OFFSETS,
    API_METADATA,
    API_PRODUCE,
    FrameBuffer,
    decode_request_header,
    request_identity,
)

MARKER_AFTER_S = 0.3
HIGH_WATERMARK = 5
MARKED = {"after_marker": "abort", "partition": None,
          "then_hold": {"api_keys": [24, 0], "max_ms": 5000}}


def _probe_answer(payload: bytes, log: dict) -> bytes:
    """The stand-in's answer to the proxy's ListOffsets or Fetch (correlation id fixed up)."""
    h = decode_request_header(payload)
    topic, partition = log["where"]
    if h.api_key == API_LIST_OFFSETS:
        body = list_offsets_response(topic, partition, HIGH_WATERMARK)
    else:
        pid, epoch = log["producer"]
        records = b""
        if log["marker_at"] is not None and time.monotonic() >= log["marker_at"]:
            records = (batch(5, pid, epoch, marker=1) + batch(6, pid + 1, epoch, marker=0)
                       + batch(7, pid, epoch, marker=0))
            log.setdefault("marker_served", time.monotonic())
        error = 6 if log["fetches"] <= log["refuse_fetches"] else 0  # NOT_LEADER_OR_FOLLOWER
        body = fetch_response(topic, partition, b"" if error else records, error=error,
                              high_watermark=8)
    return struct.pack(">i", h.correlation_id) + body[4:]


async def _scenario(rule: dict, refuse_fetches: int = 0
                    ) -> tuple[list[tuple[str, int, float]], list[dict], dict]:
    requests, answers = _frames()
    produce = request_identity(requests[API_PRODUCE])
    p = produce.partitions[0]
    log = {"where": (p.topic, p.partition), "producer": (produce.producer_id,
                                                          produce.producer_epoch),
           "marker_at": None, "fetches": 0, "refuse_fetches": refuse_fetches}
    seen: list[tuple[str, int, float]] = []

    async def broker(reader, writer):
        buf = FrameBuffer()
        while data := await reader.read(65536):
            for payload in buf.feed(data):
                h = decode_request_header(payload)
                if h.api_key == API_METADATA:  # the probe looks the leader up: not here
                    writer.close()
                    return
                if h.api_key in (API_FETCH, API_LIST_OFFSETS):
                    if h.api_key == API_FETCH:
                        log["fetches"] += 1
                        await asyncio.sleep(0.02)  # the broker's long poll, shortened
                    writer.write(_frame(_probe_answer(payload, log)))
                    await writer.drain()
                    continue
                seen.append(("arrived", h.api_key, time.monotonic()))
                writer.write(_frame(answers[h.correlation_id]))
                await writer.drain()
                if h.api_key == API_END_TXN:  # the coordinator writes its markers later
                    log["marker_at"] = time.monotonic() + MARKER_AFTER_S
                seen.append(("answered", h.api_key, time.monotonic()))

    server = await asyncio.start_server(broker, "127.0.0.1", 0)
    listen = _free_port()
    proxy = Proxy({1: (listen, server.sockets[0].getsockname()[1])})
    await proxy.start()
    proxy.add_rule(rule)
    try:
        _, producer = await asyncio.open_connection("127.0.0.1", listen)
        producer.write(_frame(requests[API_PRODUCE]))  # held: the client sees a stall
        await producer.drain()
        coord_r, coord = await asyncio.open_connection("127.0.0.1", listen)
        await asyncio.sleep(0.1)
        coord.write(_frame(requests[API_END_TXN]))
        await coord.drain()
        await coord_r.readexactly(struct.unpack(">i", await coord_r.readexactly(4))[0])
        coord.write(_frame(requests[API_ADD_PARTITIONS_TO_TXN]))  # the client's next step
        await coord.drain()
        await asyncio.wait_for(coord_r.readexactly(
            struct.unpack(">i", await coord_r.readexactly(4))[0]), 5)
        await asyncio.sleep(0.2)
        return seen, list(proxy.hold_events), log
    finally:
        for w in (producer, coord):
            w.close()
        await proxy.close()
        server.close()
        await asyncio.sleep(0.05)


def _at(seen, what, api):
    return next(t for w, a, t in seen if (w, a) == (what, api))


def test_the_held_produce_goes_after_its_abort_marker_and_before_the_next_step():
    seen, events, log = asyncio.run(_scenario({**RULE, **MARKED}))
    order = [(e["event"], e["request"]["api"]) for e in events]
    assert order == [("hold", "Produce"), ("trigger", "Produce"),
                     ("hold", "AddPartitionsToTxn"), ("marker", "Produce"),
                     ("release", "Produce"), ("answer", "Produce"),
                     ("release", "AddPartitionsToTxn"), ("answer", "AddPartitionsToTxn")]
    # the broker got the late Produce only once the marker was in the log, and the
    # client's next request only once the late one was answered
    assert log["marker_served"] <= _at(seen, "arrived", API_PRODUCE)
    assert _at(seen, "answered", API_PRODUCE) <= _at(seen, "arrived", API_ADD_PARTITIONS_TO_TXN)
    trigger, marker, release = events[1], events[3], events[4]
    assert trigger["trigger"]["api"] == "EndTxn"
    assert trigger["waits_for"]["marker"] == "abort"
    # not the commit marker of the same producer (5), nor another producer's abort (6)
    assert marker["marker"]["offset"] == 7 and marker["marker"]["marker"] == "abort"
    assert marker["searched_from"] == HIGH_WATERMARK
    assert release["reason"] == "abort marker at offset 7"
    assert events[6]["reason"] == f"answered: hold {events[0]['hold']}"


def test_without_after_marker_the_end_txn_answer_releases_it_at_once():
    seen, events, log = asyncio.run(_scenario({**RULE, "then_hold": {"api_keys": [24]}}))
    assert [e["event"] for e in events][:2] == ["hold", "release"]
    assert log["fetches"] == 0
    assert _at(seen, "arrived", API_PRODUCE) < log["marker_at"]


def test_after_the_trigger_the_rule_holds_nothing_more():
    rule = Rule.from_json({**RULE, **MARKED, "limit": 3}, 1)
    requests, _ = _frames()
    produce = request_identity(requests[API_PRODUCE])
    assert rule.decide_hold(produce)
    rule.stopped_holding = True  # the proxy sets it when the release_on event passes
    assert not rule.decide_hold(produce)


@pytest.mark.parametrize("extra, fragment", [
    ({"after_marker": "later"}, "after_marker must be"),
    ({"after_marker": "abort", "api_keys": [26]}, "after_marker must be"),
    ({"after_marker": "abort", "release_on": None, "release_after_ms": 100},
     "after_marker must be"),
])
def test_bad_after_marker(extra, fragment):
    with pytest.raises(RuleError, match=fragment):
        Rule.from_json({**RULE, **extra}, 1)


def test_a_fetch_refused_by_the_leader_is_asked_again():
    # NOT_LEADER_OR_FOLLOWER twice: the probe looks the leader up (the stand-in has no
    # metadata for it: the same broker stays), asks again, and still finds the marker
    seen, events, log = asyncio.run(_scenario({**RULE, **MARKED}, refuse_fetches=2))
    assert log["fetches"] > 2
    marker = next(e for e in events if e["event"] == "marker")
    assert marker["marker"]["offset"] == 7
    assert log["marker_served"] <= _at(seen, "arrived", API_PRODUCE)
