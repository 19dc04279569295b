"""``then_hold``: after a hold rule released its request, the next requests of that
transactional id wait until the broker has answered the released one, so the late request
is applied before the client's next step (the known-bugs schedules, docs/faults.md).

The proxy's own event loop in front of a stand-in broker on loopback (no Kafka): it
answers every request with its captured answer, the late Produce 0.3 s after it came, and
notes when each request arrived. The frames are a real kafka-python session
(tests/data/wire/txn-kafka-python-kafka-3.5.2.json).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from pathlib import Path

import pytest

from verifier.harness.faults.proxy import Proxy
from verifier.harness.kafka_wire import (
    API_ADD_PARTITIONS_TO_TXN,
    API_END_TXN,
    API_PRODUCE,
    FrameBuffer,
    request_identity,
    response_correlation_id,
)

WIRE = Path(__file__).resolve().parents[2] / "data" / "wire" / "txn-kafka-python-kafka-3.5.2.json"
TXN = "wire-kafka-python"
PRODUCE_ANSWER_DELAY_S = 0.3


def _frames() -> tuple[dict[int, bytes], dict[int, bytes]]:
    """The session's first Produce, EndTxn and (the next transaction's) AddPartitionsToTxn
    requests by api key, and each request's captured answer by its correlation id."""
    doc = json.loads(WIRE.read_text())
    requests: dict[int, list[bytes]] = {}
    pending: dict[int, list[bytes]] = {}
    answer_of: dict[bytes, bytes] = {}
    for f in doc["frames"]:
        payload = bytes.fromhex(f["hex"])
        if f["direction"] == "request":
            requests.setdefault(request_identity(payload).api_key, []).append(payload)
            pending.setdefault(f["conn"], []).append(payload)
        else:
            corr = response_correlation_id(payload)
            waiting = pending.get(f["conn"], [])
            while waiting:
                req = waiting.pop(0)
                if request_identity(req).correlation_id == corr:
                    answer_of[req] = payload
                    break
    chosen = {API_PRODUCE: requests[API_PRODUCE][0], API_END_TXN: requests[API_END_TXN][0],
              API_ADD_PARTITIONS_TO_TXN: requests[API_ADD_PARTITIONS_TO_TXN][-1]}
    return chosen, {request_identity(r).correlation_id: answer_of[r] for r in chosen.values()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def _scenario(rule: dict, add_first: bool = False, rules: list | None = None
                    ) -> tuple[list[tuple[str, int, float]], list[dict]]:
    """Produce held; EndTxn passes (releases it); AddPartitionsToTxn right after
    (``add_first``: one before the EndTxn too, as the held transaction adding another
    partition). Returns the stand-in broker's log ((arrived|answered, api key, time)) and
    the hold events; ``rules`` gets the rule as the proxy keeps it."""
    requests, answers = _frames()
    log: list[tuple[str, int, float]] = []

    async def broker(reader, writer):
        buf = FrameBuffer()
        while data := await reader.read(65536):
            for payload in buf.feed(data):
                ident = request_identity(payload)
                log.append(("arrived", ident.api_key, time.monotonic()))
                if ident.api_key == API_PRODUCE:
                    await asyncio.sleep(PRODUCE_ANSWER_DELAY_S)
                writer.write(_frame(answers[ident.correlation_id]))
                await writer.drain()
                log.append(("answered", ident.api_key, time.monotonic()))

    server = await asyncio.start_server(broker, "127.0.0.1", 0)
    upstream = server.sockets[0].getsockname()[1]
    listen = _free_port()
    proxy = Proxy({1: (listen, upstream)})
    await proxy.start()
    added = proxy.add_rule(rule)
    if rules is not None:
        rules.append(added)
    try:
        _, producer = await asyncio.open_connection("127.0.0.1", listen)
        producer.write(_frame(requests[API_PRODUCE]))  # held: the client sees a stall
        await producer.drain()
        coord_r, coord = await asyncio.open_connection("127.0.0.1", listen)
        await asyncio.sleep(0.1)
        if add_first:
            coord.write(_frame(requests[API_ADD_PARTITIONS_TO_TXN]))
            await coord.drain()
            await coord_r.readexactly(struct.unpack(">i", await coord_r.readexactly(4))[0])
        coord.write(_frame(requests[API_END_TXN]))  # its answer releases the Produce
        await coord.drain()
        await coord_r.readexactly(struct.unpack(">i", await coord_r.readexactly(4))[0])
        coord.write(_frame(requests[API_ADD_PARTITIONS_TO_TXN]))  # the client's next step
        await coord.drain()
        await coord_r.readexactly(struct.unpack(">i", await coord_r.readexactly(4))[0])
        await asyncio.sleep(PRODUCE_ANSWER_DELAY_S + 0.2)
        return log, list(proxy.hold_events)
    finally:
        for w in (producer, coord):
            w.close()
        await proxy.close()
        server.close()
        await asyncio.sleep(0.05)  # let the closed connections' tasks end


RULE = {"kind": "hold", "api_keys": [0], "transactional_id": TXN,
        "release_on": {"api_key": 26, "direction": "response", "transactional_id": "same"}}


def _at(log, what, api):
    return next(t for w, a, t in log if (w, a) == (what, api))


def test_the_next_request_waits_until_the_released_one_is_answered():
    log, events = asyncio.run(_scenario({**RULE, "then_hold": {"api_keys": [24]}}))
    # the broker saw the late Produce, answered it, and only then the AddPartitionsToTxn
    assert _at(log, "answered", API_PRODUCE) <= _at(log, "arrived", API_ADD_PARTITIONS_TO_TXN)
    order = [(e["event"], e["request"]["api"]) for e in events]
    assert order == [("hold", "Produce"), ("release", "Produce"),
                     ("hold", "AddPartitionsToTxn"), ("answer", "Produce"),
                     ("release", "AddPartitionsToTxn"), ("answer", "AddPartitionsToTxn")]
    assert events[1]["reason"] == "EndTxn response"
    assert events[2]["client_view"] == "delay"
    assert events[4]["reason"] == f"answered: hold {events[0]['hold']}"
    assert events[4]["delivered"] is True
    assert events[5].get("gated") is True and "gated" not in events[3]


def test_without_then_hold_the_next_request_overtakes_the_late_one():
    log, events = asyncio.run(_scenario(RULE))
    assert _at(log, "arrived", API_ADD_PARTITIONS_TO_TXN) < _at(log, "answered", API_PRODUCE)
    assert [e["event"] for e in events] == ["hold", "release", "answer"]


def test_the_gate_opens_after_max_ms_if_no_answer_comes():
    # the broker answers the Produce after 0.3 s; a 50-ms gate lets the next one go first
    log, events = asyncio.run(_scenario({**RULE, "then_hold": {"api_keys": [24],
                                                                "max_ms": 50}}))
    assert _at(log, "arrived", API_ADD_PARTITIONS_TO_TXN) < _at(log, "answered", API_PRODUCE)
    release = [e for e in events if e["event"] == "release"
               and e["request"]["api"] == "AddPartitionsToTxn"]
    assert release and release[0]["reason"] == "after 50 ms"


NEXT_ADD = {"kind": "hold", "api_keys": [0], "transactional_id": TXN,
            "release_on": {"api_key": 24, "direction": "response", "ok": True,
                           "transactional_id": "same", "after": {"api_key": 26}},
            "then_hold": {"api_keys": [0, 22]}}


def test_release_on_after_counts_the_next_transactions_add_partitions_only():
    # KAFKA-17754 (b): the held Produce goes once the *next* transaction added partitions;
    # an AddPartitionsToTxn of its own transaction (before its EndTxn) does not release it
    log, events = asyncio.run(_scenario(NEXT_ADD, add_first=True))
    assert [(e["event"], e["request"]["api"]) for e in events] == [
        ("hold", "Produce"), ("armed", "Produce"), ("release", "Produce"),
        ("answer", "Produce")]
    assert events[1]["by"]["api"] == "EndTxn"
    assert events[2]["reason"] == "AddPartitionsToTxn response"
    adds = [t for w, a, t in log if (w, a) == ("arrived", API_ADD_PARTITIONS_TO_TXN)]
    assert len(adds) == 2 and adds[0] < _at(log, "arrived", API_END_TXN) \
        < adds[1] < _at(log, "arrived", API_PRODUCE)


def test_without_after_the_own_transactions_add_partitions_releases_it():
    rule = {**NEXT_ADD, "release_on": {k: v for k, v in NEXT_ADD["release_on"].items()
                                       if k != "after"}}
    log, events = asyncio.run(_scenario(rule, add_first=True))
    assert _at(log, "arrived", API_PRODUCE) < _at(log, "arrived", API_END_TXN)
    assert "armed" not in [e["event"] for e in events]


def test_bad_release_on_after():
    from verifier.harness.faults.rules import Rule, RuleError

    with pytest.raises(RuleError, match="release_on after"):
        Rule.from_json({**NEXT_ADD, "release_on": {"api_key": 24, "after": 26}}, 1)
    with pytest.raises(RuleError, match="after direction"):
        Rule.from_json({**NEXT_ADD, "release_on": {"api_key": 24, "after": {
            "api_key": 26, "direction": "sideways"}}}, 1)


@pytest.mark.parametrize("then_hold, fragment", [
    ({"api_keys": [3]}, "transactional APIs"),
    ({"max_ms": 0}, "max_ms"),
    ({"until": "later"}, "then_hold must be"),
])
def test_bad_then_hold(then_hold, fragment):
    from verifier.harness.faults.rules import Rule, RuleError

    with pytest.raises(RuleError, match=fragment):
        Rule.from_json({**RULE, "then_hold": then_hold}, 1)


async def _copy_scenario(rule: dict, rules: list | None = None
                         ) -> tuple[list[int], list[dict], bytes]:
    """EndTxn (a commit) through a copy hold, then AddPartitionsToTxn on the same
    connection. Returns the api keys the broker received, the hold events and whatever
    reached the client after the two answers it expects; ``rules`` gets the rule."""
    requests, answers = _frames()
    arrived: list[int] = []

    async def broker(reader, writer):
        buf = FrameBuffer()
        while data := await reader.read(65536):
            for payload in buf.feed(data):
                ident = request_identity(payload)
                arrived.append(ident.api_key)
                writer.write(_frame(answers[ident.correlation_id]))
                await writer.drain()

    server = await asyncio.start_server(broker, "127.0.0.1", 0)
    listen = _free_port()
    proxy = Proxy({1: (listen, server.sockets[0].getsockname()[1])})
    await proxy.start()
    added = proxy.add_rule(rule)
    if rules is not None:
        rules.append(added)
    try:
        r, w = await asyncio.open_connection("127.0.0.1", listen)
        for api in (API_END_TXN, API_ADD_PARTITIONS_TO_TXN):
            w.write(_frame(requests[api]))
            await w.drain()
            size = struct.unpack(">i", await asyncio.wait_for(r.readexactly(4), 2))[0]
            await r.readexactly(size)  # its own answer: the client goes on
        await asyncio.sleep(0.3)
        extra = b""
        try:
            extra = await asyncio.wait_for(r.read(100), 0.2)
        except TimeoutError:
            pass
        return arrived, list(proxy.hold_events), extra
    finally:
        w.close()
        await proxy.close()
        server.close()
        await asyncio.sleep(0.05)


COPY = {"kind": "hold", "api_keys": [26], "transactional_id": TXN, "client_view": "copy",
        "release_on": {"api_key": 24, "direction": "response", "ok": True,
                       "transactional_id": "same"}}


def test_a_copy_hold_lets_the_original_through_and_replays_the_copy_late():
    arrived, events, extra = asyncio.run(_copy_scenario({**COPY, "committed": True}))
    # the broker got the EndTxn, the AddPartitionsToTxn, then the late copy of the EndTxn
    assert arrived == [API_END_TXN, API_ADD_PARTITIONS_TO_TXN, API_END_TXN]
    assert [(e["event"], e["request"]["api"]) for e in events] == [
        ("hold", "EndTxn"), ("release", "EndTxn"), ("answer", "EndTxn")]
    assert events[1]["reason"] == "AddPartitionsToTxn response"
    assert events[2]["to_client"] is False and extra == b""  # the client had its answer


def test_committed_false_does_not_copy_a_commit():
    arrived, events, _ = asyncio.run(_copy_scenario({**COPY, "committed": False}))
    assert arrived == [API_END_TXN, API_ADD_PARTITIONS_TO_TXN] and events == []
