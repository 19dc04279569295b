"""The hold fault's pure parts on captured frames: the request identity it matches and
records, which requests a rule holds, and which later event releases them.

The frames are real: tests/data/wire/txn-<client>-kafka-<version>.json are whole
transactional sessions (init, a committed transaction over two partitions, an aborted
one) of kafka-python 3.0.12 and librdkafka against Kafka 3.5.2 and 4.1.1, recorded by
``tests/data/capture_wire.py``.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from verifier.harness.faults.rules import Rule, RuleError, RuleSet
from verifier.harness.kafka_wire import (
    API_ADD_PARTITIONS_TO_TXN,
    API_END_TXN,
    API_PRODUCE,
    FrameBuffer,
    RequestIdentity,
    request_identity,
    response_correlation_id,
    response_summary,
)

WIRE = Path(__file__).resolve().parents[2] / "data" / "wire"
SESSIONS = sorted(WIRE.glob("txn-*.json"))
#: Produce v13 (topic ids, KIP-516) from kafka-python's own encoder, carrying a record
#: batch of the kafka-python 4.1.1 session: transactional id "wire-java", partition 1
PRODUCE_V13 = (
    "0000007e0000000d0000000b0003636170000a776972652d6a617661ffff00007530020f1e2d3c4b5a697887"
    "96a5b4c3d2e1f002000000014700000000000000000000003a000000000227552ecd001000000000000001a2"
    "0b2e5728000001a20b2e5728000000000000000000000000000000000001100000000104633000000000")

Event = collections.namedtuple("Event", "direction request response")


def session(path: Path) -> tuple[str, list[Event]]:
    """The session's events in order: each request, and each response paired with the
    request it answers (responses on a connection come in request order)."""
    doc = json.loads(path.read_text())
    pending: dict[int, collections.deque] = collections.defaultdict(collections.deque)
    events = []
    for f in doc["frames"]:
        payload = bytes.fromhex(f["hex"])
        if f["direction"] == "request":
            ident = request_identity(payload)
            pending[f["conn"]].append(ident)
            events.append(Event("request", ident, None))
        else:
            corr = response_correlation_id(payload)
            while pending[f["conn"]]:
                ident = pending[f["conn"]].popleft()
                if ident.correlation_id == corr:
                    events.append(Event("response", ident, payload))
                    break
    return doc["client"], events


def hold_rule(**params) -> Rule:
    return Rule.from_json({"kind": "hold", **params}, 1)


def txn_of(path: Path) -> str:
    return f"wire-{json.loads(path.read_text())['client']}"


def test_every_captured_session_is_there():
    names = {p.name for p in SESSIONS}
    assert {f"txn-{c}-kafka-{v}.json" for c in ("kafka-python", "librdkafka")
            for v in ("3.5.2", "4.1.1")} <= names


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_identity_of_the_transactional_requests(path):
    client, events = session(path)
    txn = f"wire-{client}"
    requests = [e.request for e in events if e.direction == "request"]
    produces = [r for r in requests if r.api_key == API_PRODUCE]
    ends = [r for r in requests if r.api_key == API_END_TXN]
    adds = [r for r in requests if r.api_key == API_ADD_PARTITIONS_TO_TXN]
    assert produces and all(r.transactional_id == txn and r.acks == -1 for r in produces)
    # the first transaction writes c0 to partition 0 and c1 to partition 1, sequence 0
    # (kafka-python sends both in one request, librdkafka one request per partition);
    # the second transaction writes a0 to partition 0, sequence 1
    writes = sorted((p.partition, p.base_sequence, p.records)
                    for r in produces for p in r.partitions)
    assert writes == [(0, 0, 1), (0, 1, 1), (1, 0, 1)]
    assert all(p.topic == "t-wire" for r in produces for p in r.partitions)
    pid = produces[0].producer_id
    assert pid is not None and pid >= 0 and produces[0].producer_epoch == 0
    # a commit, then an abort, by the same producer id and epoch
    assert [(e.transactional_id, e.committed, e.producer_id) for e in ends] == [
        (txn, True, pid), (txn, False, pid)]
    assert adds and all(a.transactional_id == txn for a in adds)
    assert {p.partition for p in adds[0].partitions} <= {0, 1}
    js = produces[0].to_json()
    assert js["api"] == "Produce" and js["transactional_id"] == txn
    assert js["partitions"][0]["topic"] == "t-wire"


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_responses_say_what_the_broker_did(path):
    _, events = session(path)
    produce = [response_summary(e.response, e.request.api_key, e.request.api_version)
               for e in events if e.direction == "response" and e.request.api_key == 0]
    ends = [response_summary(e.response, e.request.api_key, e.request.api_version)
            for e in events if e.direction == "response" and e.request.api_key == API_END_TXN]
    assert ends == [{"error_code": 0}, {"error_code": 0}]
    written = [p for s in produce for p in s["partitions"]]
    assert {(t, part) for t, part, _, _ in written} == {("t-wire", 0), ("t-wire", 1)}
    assert all(err == 0 and offset >= 0 for _, _, err, offset in written)


def walk(rule: Rule, events: list[Event]) -> tuple[RequestIdentity | None, int | None]:
    """Run a session past one hold rule: the request it holds, and the index of the
    event that releases it (None if none does)."""
    rules = RuleSet()
    rules._rules[rule.id] = rule
    held = None
    for i, e in enumerate(events):
        if e.direction == "request" and held is None and rules.hold_for(1, e.request):
            held = e.request
            continue
        if held is not None and rule.releases(held, e.request, e.direction):
            return held, i
    return held, None


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_a_produce_held_until_its_transactions_end_txn_response(path):
    _, events = session(path)
    txn = txn_of(path)
    rule = hold_rule(api_keys=[0], transactional_id=txn, partition=1,
                     release_on={"api_key": 26, "direction": "response",
                                 "transactional_id": "same"})
    held, at = walk(rule, events)
    assert held is not None and held.api_key == API_PRODUCE
    assert any(p.partition == 1 for p in held.partitions)  # the record c1, partition 1
    released_by = events[at]
    # the commit's EndTxn response is the first event that releases it: not the EndTxn
    # request before it, not the AddPartitionsToTxn of the next transaction
    assert released_by.direction == "response" and released_by.request.api_key == API_END_TXN
    assert released_by.request.committed is True
    first_end = next(i for i, e in enumerate(events) if e.request.api_key == API_END_TXN)
    assert events[first_end].direction == "request" and first_end < at
    assert (rule.matched, rule.hits) == (1, 1)


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_an_end_txn_held_until_the_next_add_partitions(path):
    _, events = session(path)
    rule = hold_rule(api_keys=[26], transactional_id=txn_of(path),
                     release_on={"api_key": 24, "direction": "request",
                                 "transactional_id": "same"})
    held, at = walk(rule, events)
    assert held.api_key == API_END_TXN and held.committed is True
    # released by the next transaction's AddPartitionsToTxn request (partition 0, a0)
    assert events[at].request.api_key == API_ADD_PARTITIONS_TO_TXN
    assert events[at].direction == "request"
    assert [p.partition for p in events[at].request.partitions] == [0]


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_conditions_that_do_not_match(path):
    _, events = session(path)
    txn = txn_of(path)
    end_response = {"api_key": 26, "direction": "response", "transactional_id": "same"}
    # another producer's transactional id: nothing held
    assert walk(hold_rule(transactional_id="someone-else", release_on=end_response),
                events) == (None, None)
    # a partition the session never writes
    assert walk(hold_rule(partition=7, release_on=end_response), events)[0] is None
    assert walk(hold_rule(topic="other-topic", release_on=end_response), events)[0] is None
    # released only by an event of the named transactional id
    held, at = walk(hold_rule(transactional_id=txn, release_on={
        "api_key": 26, "direction": "response", "transactional_id": "not-this-one"}), events)
    assert held is not None and at is None
    # an explicit id and "any id" both see the EndTxn response
    for on in ({"api_key": 26, "transactional_id": txn}, {"api_key": 26}):
        held, at = walk(hold_rule(transactional_id=txn, release_on=on), events)
        assert events[at].request.api_key == API_END_TXN  # direction defaults to response


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_skip_and_limit_choose_which_requests_are_held(path):
    _, events = session(path)
    produces = [e.request for e in events if e.direction == "request" and e.request.api_key == 0]
    rule = hold_rule(transactional_id=txn_of(path), skip=1, limit=1, release_after_ms=100)
    held = [r for r in produces if rule.decide_hold(r)]
    assert held == [produces[1]]  # the second Produce only
    assert (rule.matched, rule.hits) == (len(produces), 1)


def test_produce_v13_names_its_topic_by_id():
    (payload,) = FrameBuffer().feed(bytes.fromhex(PRODUCE_V13))
    ident = request_identity(payload)
    assert (ident.api_version, ident.transactional_id) == (13, "wire-java")
    assert ident.correlation_id == 11
    (part,) = ident.partitions
    assert part.topic == "0f1e2d3c4b5a69788796a5b4c3d2e1f0" and part.partition == 1
    assert (part.base_sequence, part.records) == (0, 1)
    assert hold_rule(partition=1, release_after_ms=1).hold_matches(ident)
    assert hold_rule(topic=part.topic, release_after_ms=1).hold_matches(ident)
    # a topic name cannot match a request that carries only the topic's id
    assert not hold_rule(topic="t-wire", release_after_ms=1).hold_matches(ident)


@pytest.mark.parametrize("params, fragment", [
    ({}, "release_on, release_after_ms"),
    ({"release_after_ms": 0}, "release_after_ms must be"),
    ({"release_after_ms": 5, "client_view": "hang"}, "client_view"),
    ({"release_on": {"direction": "response"}}, "release_on must be"),
    ({"release_on": {"api_key": 26, "direction": "sideways"}}, "direction must be"),
    ({"release_on": {"api_key": 26, "when": 1}}, "release_on must be"),
    ({"release_after_ms": 5, "skip": -1}, "skip must be"),
    ({"api_keys": [3], "release_on": {"api_key": 26, "transactional_id": "same"}},
     "carry a transactional id"),
    ({"release_after_ms": 5, "transactional_id": 7}, "expected a string"),
])
def test_bad_hold_rules(params, fragment):
    with pytest.raises(RuleError, match=fragment):
        hold_rule(**params)


def test_hold_rule_json_round_trip():
    rule = hold_rule(broker=2, transactional_id="x", partition=0, client_view="reset",
                     release_on={"api_key": 26, "transactional_id": "same"},
                     release_after_ms=5000)
    js = rule.to_json()
    assert js["release_on"] == {"api_key": 26, "direction": "response",
                                "transactional_id": "same"}
    assert (js["client_view"], js["release_after_ms"], js["partition"]) == ("reset", 5000, 0)
    again = Rule.from_json({k: v for k, v in js.items()
                            if k not in ("id", "matched", "hits", "clients", "holds", "action",
                                         "next",
                                         "every", "probability", "seed", "limit", "ms",
                                         "direction")}, 2)
    assert again.release_on == rule.release_on and again.broker == 2


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_ok_waits_for_an_add_partitions_the_coordinator_accepted(path):
    """After a commit the next AddPartitionsToTxn is first answered
    CONCURRENT_TRANSACTIONS (51) in every captured session; "ok" skips that answer and
    releases on the retry's, the first the coordinator accepted."""
    _, events = session(path)
    rule = hold_rule(api_keys=[26], transactional_id=txn_of(path),
                     release_on={"api_key": 24, "direction": "response", "ok": True,
                                 "transactional_id": "same"})
    held, released = None, None
    for i, e in enumerate(events):
        if e.direction == "request" and held is None and rule.decide_hold(e.request):
            held = e.request
            continue
        error = (response_summary(e.response, e.request.api_key, e.request.api_version)
                 .get("error_code") if e.direction == "response" else None)
        if held is not None and rule.releases(held, e.request, e.direction, error):
            released = (i, error)
            break
    adds = [response_summary(e.response, 24, e.request.api_version)["error_code"]
            for e in events if e.direction == "response" and e.request.api_key == 24]
    assert adds[-2:] == [51, 0]  # the next transaction's: refused once, then accepted
    assert held.api_key == API_END_TXN and released[1] == 0
    assert events[released[0]].request.api_key == API_ADD_PARTITIONS_TO_TXN
    with pytest.raises(RuleError, match="applies to a response"):
        hold_rule(release_on={"api_key": 24, "direction": "request", "ok": True})


def produce_v3(txn: str, partition: int, values: list[bytes]) -> bytes:
    """A Produce v3 request (not flexible) of one uncompressed batch v2 to ``t-wire``:
    the batch header, then the values as its records' bytes (the identity reads the
    header's fields and searches the values)."""
    import struct

    records = b"".join(values)
    header = struct.pack(">qiibihiqqqhii", 0, 49 + len(records), 0, 2, 0, 0x10, 0, 0, 0, 7,
                         0, 0, len(values))
    batch = header + records
    body = (struct.pack(">h", len(txn)) + txn.encode() + struct.pack(">hi", -1, 30000)
            + struct.pack(">i", 1) + struct.pack(">h", 6) + b"t-wire"
            + struct.pack(">i", 1) + struct.pack(">ii", partition, len(batch)) + batch)
    return struct.pack(">hhih", API_PRODUCE, 3, 5, 1) + b"c" + body


def test_a_produce_says_what_its_records_mean_for_their_transaction():
    from verifier.rundata.records import encode_values

    for abort in (True, False):
        values = encode_values("r", "transactional-0", 1, [(0, 3), (0, 4)], 9, abort, 1, 100)
        ident = request_identity(produce_v3("wire-x", 0, values))
        assert (ident.transactional_id, ident.records_abort) == ("wire-x", abort)
        assert ident.to_json()["records_abort"] is abort
        assert [p.partition for p in ident.partitions] == [0]
    # another writer's values say nothing: None, and the JSON leaves it out
    other = request_identity(produce_v3("wire-x", 0, [b"c0"]))
    assert other.records_abort is None and "records_abort" not in other.to_json()


def test_release_on_records_waits_for_a_transaction_meant_to_abort():
    """KAFKA-17754's copy: released by the first Produce answered whose records say their
    transaction is meant to abort, not by one meant to commit nor by a foreign one."""
    rule = hold_rule(api_keys=[26], transactional_id="t", committed=True,
                     release_on={"api_key": 0, "direction": "response",
                                 "transactional_id": "same", "records": "abort"})
    held = RequestIdentity(26, 3, 1, "c", transactional_id="t", committed=True)

    def produce(abort, txn="t"):
        return RequestIdentity(0, 9, 2, "c", transactional_id=txn, records_abort=abort)

    assert not rule.releases(held, produce(False), "response", None)
    assert not rule.releases(held, produce(None), "response", None)
    assert not rule.releases(held, produce(True), "request", None)
    assert not rule.releases(held, produce(True, "u"), "response", None)
    assert rule.releases(held, produce(True), "response", None)
    commit = hold_rule(api_keys=[26], release_on={"api_key": 0, "records": "commit"})
    assert commit.releases(held, produce(False), "response", None)
    assert not commit.releases(held, produce(True), "response", None)


def test_release_on_partition_waits_for_the_held_partition_to_be_added():
    """KAFKA-17754 (b): the next transaction's first AddPartitionsToTxn may add only other
    partitions; the late Produce to partition 0 goes once one adds partition 0."""
    from verifier.harness.kafka_wire import PartitionWrite

    def add(*parts):
        return RequestIdentity(24, 3, 4, "c", transactional_id="t",
                               partitions=tuple(PartitionWrite("t-wire", p) for p in parts))

    held = RequestIdentity(0, 13, 1, "c", transactional_id="t",
                           partitions=(PartitionWrite("0f1e", 0),))  # v13: topic by id
    for params in ({"partition": 0}, {}):  # the rule's partition, else the held request's
        rule = hold_rule(transactional_id="t", **params,
                         release_on={"api_key": 24, "direction": "response", "ok": True,
                                     "transactional_id": "same", "partition": "same"})
        assert not rule.releases(held, add(1), "response", 0)
        assert not rule.releases(held, add(1, 2), "response", 0)
        assert not rule.releases(held, add(2, 0), "response", 51)  # not accepted yet
        assert rule.releases(held, add(2, 0), "response", 0)
    fixed = hold_rule(release_on={"api_key": 24, "partition": 2})
    assert fixed.releases(held, add(1, 2), "response", 0)
    assert not fixed.releases(held, add(0), "response", 0)


@pytest.mark.parametrize("release_on, fragment", [
    ({"api_key": 24, "records": "abort"}, "on a Produce"),
    ({"api_key": 0, "records": "maybe"}, "records is one of"),
    ({"api_key": 24, "partition": "other"}, "partition number or"),
    ({"api_key": 24, "partition": True}, "partition number or"),
])
def test_bad_release_on_partition_and_records(release_on, fragment):
    with pytest.raises(RuleError, match=fragment):
        hold_rule(release_on=release_on)
