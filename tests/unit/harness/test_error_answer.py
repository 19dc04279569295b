"""The error-answer fault's pure parts: the answers the proxy forges (a refused request's,
built from the request; a broker's answer with its errors replaced), which requests a
rule chooses, and the order a refused answer reaches the client in.

Requests are encoded with kafka-python's own messages, every version it has of each API
the rule answers; the broker answers are real (tests/data/wire: whole transactional
sessions of kafka-python and librdkafka against Kafka 3.5.2 and 4.1.1).
"""

from __future__ import annotations

import asyncio
import collections
import json
import uuid
from pathlib import Path

import pytest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)

from verifier.harness.faults import error_rules, forging
from verifier.harness.faults.rules import Rule, RuleSet
from verifier.harness.kafka_wire import (
    API_BY_NAME,
    API_PRODUCE,
    ERROR_CODES,
    PartitionWrite,
    RequestIdentity,
    WireError,
    decode_request_header,
    encode_request,
    refused_response,
    replaced_response,
    response_correlation_id,
)
from verifier.harness.kafka_wire.error_answer import MESSAGES

WIRE = Path(__file__).resolve().parents[2] / "data" / "wire"
NOT_LEADER, TIMED_OUT = ERROR_CODES["NOT_LEADER_OR_FOLLOWER"], ERROR_CODES["REQUEST_TIMED_OUT"]
TOPIC_ID = uuid.UUID(int=0x5EED)


def _produce(v: int):
    t, p = ProduceRequest.TopicProduceData, ProduceRequest.TopicProduceData.PartitionProduceData
    return ProduceRequest(transactional_id="r.tx-0", acks=-1, timeout_ms=30000, topic_data=[
        t(name="r.t", topic_id=TOPIC_ID, partition_data=[p(index=0, records=None),
                                                         p(index=2, records=None)])],
        version=v)


def _add_partitions(v: int):
    cls = AddPartitionsToTxnRequest
    topics = [cls.AddPartitionsToTxnTopic(name="r.t", partitions=[0, 2])]
    if v < 4:
        return cls(v3_and_below_transactional_id="r.tx-0", v3_and_below_producer_id=7,
                   v3_and_below_producer_epoch=1, v3_and_below_topics=topics, version=v)
    txn = cls.AddPartitionsToTxnTransaction
    return cls(transactions=[txn(transactional_id="r.tx-0", producer_id=7, producer_epoch=1,
                                 verify_only=False, topics=[
                                     txn.AddPartitionsToTxnTopic(name="r.t",
                                                                 partitions=[0, 2])])],
               version=v)


def _offset_commit(v: int):
    t = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    return TxnOffsetCommitRequest(
        transactional_id="r.tx-0", group_id="g", producer_id=7, producer_epoch=1,
        generation_id=-1, member_id="", group_instance_id=None, topics=[t(name="r.t", partitions=[
            t.TxnOffsetCommitRequestPartition(partition_index=1, committed_offset=5,
                                              committed_leader_epoch=-1,
                                              committed_metadata=None)])], version=v)


#: api key -> (a request of version v, the lowest version a Kafka 4 broker serves)
REQUESTS = {
    0: (_produce, 3),
    10: (lambda v: FindCoordinatorRequest(key="r.tx-0", key_type=1,
                                          coordinator_keys=["r.tx-0"], version=v), 0),
    22: (lambda v: InitProducerIdRequest(transactional_id="r.tx-0", transaction_timeout_ms=60000,
                                         producer_id=-1, producer_epoch=-1, version=v), 0),
    24: (_add_partitions, 0),
    25: (lambda v: AddOffsetsToTxnRequest(transactional_id="r.tx-0", producer_id=7,
                                          producer_epoch=1, group_id="g", version=v), 0),
    26: (lambda v: EndTxnRequest(transactional_id="r.tx-0", producer_id=7, producer_epoch=1,
                                 committed=True, version=v), 0),
    28: (_offset_commit, 0),
}
CASES = [(key, v) for key, (_, low) in REQUESTS.items()
         for v in range(low, MESSAGES[key][0].max_version + 1)]


def _errors(response, key: int, v: int) -> list[int]:
    """Every error code the decoded answer carries (read here, not by the codec)."""
    if key == 0:
        return [p.error_code for t in response.responses for p in t.partition_responses]
    if key == 24 and v < 4:
        return [p.partition_error_code for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition]
    if key == 24:
        return [response.error_code] + [p.partition_error_code
                                        for r in response.results_by_transaction
                                        for t in r.topic_results for p in t.results_by_partition]
    if key == 28:
        return [p.error_code for t in response.topics for p in t.partitions]
    if key == 10 and v >= 4:
        return [c.error_code for c in response.coordinators]
    return [response.error_code]


def test_api_names_cover_the_transaction_apis():
    assert set(API_BY_NAME) == {"produce", "find-coordinator", "init-producer-id",
                                "add-partitions-to-txn", "add-offsets-to-txn", "end-txn",
                                "txn-offset-commit"}
    assert set(REQUESTS) == set(MESSAGES) == set(API_BY_NAME.values())
    assert (ERROR_CODES["NOT_LEADER_OR_FOLLOWER"], ERROR_CODES["MESSAGE_TOO_LARGE"],
            ERROR_CODES["NOT_ENOUGH_REPLICAS_AFTER_APPEND"]) == (6, 10, 20)


@pytest.mark.parametrize("key, v", CASES)
def test_a_refused_request_is_answered_with_its_error_everywhere(key, v):
    """The answer of the request's version, to its correlation id, with the error in
    every partition (a Produce's and its topics by name or by id, no offset) or for the
    request; what the client asked about is all answered."""
    payload = encode_request(REQUESTS[key][0](v), correlation_id=4242, client_id="c")
    answer = refused_response(payload, NOT_LEADER)
    response = MESSAGES[key][1].decode(answer, version=v, header=True)
    assert response_correlation_id(answer) == 4242
    errors = _errors(response, key, v)
    assert errors and set(errors) == {NOT_LEADER}
    if key == 0:
        parts = [(t.topic_id if v >= 13 else t.name, p.index, p.base_offset)
                 for t in response.responses for p in t.partition_responses]
        assert parts == [(TOPIC_ID if v >= 13 else "r.t", 0, -1),
                         (TOPIC_ID if v >= 13 else "r.t", 2, -1)]
    if key == 22:
        assert (response.producer_id, response.producer_epoch) == (-1, -1)


def test_a_version_beyond_kafka_python_s_schemas_is_not_forged():
    payload = bytearray(encode_request(_produce(13), correlation_id=1, client_id="c"))
    payload[2:4] = (14).to_bytes(2, "big")
    assert decode_request_header(bytes(payload)).api_version == 14
    with pytest.raises(WireError, match="newer than kafka-python"):
        refused_response(bytes(payload), NOT_LEADER)
    metadata = encode_request(FindCoordinatorRequest(key="k", version=0), 1, "c")
    metadata = (3).to_bytes(2, "big") + metadata[2:]  # a Metadata request: not answered
    with pytest.raises(WireError, match="no error answer for api key 3"):
        refused_response(metadata, NOT_LEADER)


def _answers():
    """(api key, version, the broker's answer) of every captured answer the rule covers."""
    for path in sorted(WIRE.glob("txn-*.json")):
        pending = collections.defaultdict(list)
        for f in json.loads(path.read_text())["frames"]:
            payload = bytes.fromhex(f["hex"])
            if f["direction"] == "request":
                pending[f["conn"]].append(decode_request_header(payload))
                continue
            corr = response_correlation_id(payload)
            h = next(h for h in pending[f["conn"]] if h.correlation_id == corr)
            if h.api_key in MESSAGES:
                yield pytest.param(h.api_key, h.api_version, payload,
                                   id=f"{path.stem}-{h.api_key}v{h.api_version}-{corr}")


def _without_errors(response) -> dict:
    drop = {"error_code", "partition_error_code", "base_offset", "log_append_time_ms"}

    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k not in drop}
        return [clean(v) for v in x] if isinstance(x, list) else x

    return clean(response.to_dict())


@pytest.mark.parametrize("key, v, answer", list(_answers()))
def test_a_replaced_answer_is_the_broker_s_with_only_its_errors_changed(key, v, answer):
    """Every error code in the answer is the rule's; a Produce's offsets go (an error
    answer has none); everything else, the correlation id first, is the broker's."""
    replaced = replaced_response(answer, key, v, TIMED_OUT)
    cls = MESSAGES[key][1]
    before = cls.decode(answer, version=v, header=True)
    after = cls.decode(replaced, version=v, header=True)
    assert response_correlation_id(replaced) == response_correlation_id(answer)
    assert len(replaced) == len(answer)
    assert set(_errors(after, key, v)) == {TIMED_OUT}
    assert _without_errors(after) == _without_errors(before)
    if key == API_PRODUCE:
        assert {p.base_offset for t in after.responses for p in t.partition_responses} == {-1}
        assert any(p.base_offset >= 0 for t in before.responses for p in t.partition_responses)


@pytest.mark.parametrize("key, v", CASES)
def test_every_api_and_version_s_answer_can_be_replaced(key, v):
    """The APIs the captured sessions lack (TxnOffsetCommit, AddOffsetsToTxn, batched
    AddPartitionsToTxn and FindCoordinator): an answer without error, encoded by
    kafka-python at the request's version, gets the rule's error everywhere."""
    payload = encode_request(REQUESTS[key][0](v), correlation_id=77, client_id="c")
    ok = refused_response(payload, 0)
    replaced = replaced_response(ok, key, v, TIMED_OUT)
    response = MESSAGES[key][1].decode(replaced, version=v, header=True)
    assert set(_errors(response, key, v)) == {TIMED_OUT}
    assert response_correlation_id(replaced) == 77


# ----- which requests a rule chooses ------------------------------------------------------

def rule(**params) -> Rule:
    return Rule.from_json({"kind": "error_answer", "error": "NOT_LEADER_OR_FOLLOWER",
                           "variant": "refuse", **params}, 1)


def produce(client="verifier.generator.alo-0", txn=None, partitions=(0,), acks=-1, key=0):
    return RequestIdentity(key, 9, 1, client, transactional_id=txn, acks=acks,
                           partitions=tuple(PartitionWrite("r.t", p) for p in partitions))


def test_next_chooses_the_first_n_it_matches_after_skip_and_counts_per_client():
    r = rule(next=2, skip=1)
    rules = RuleSet()
    rules._rules[r.id] = r
    got = [rules.error_for(1, produce()) is r for _ in range(5)]
    assert got == [False, True, True, False, False]
    assert (r.matched, r.chosen, r.hits) == (5, 2, 0)
    assert rules.error_for(1, produce(key=1)) is None  # a Fetch: not the rule's api
    error_rules.forged(r, "verifier.generator.alo-0")
    assert r.to_json()["clients"] == {"verifier.generator.alo-0": [5, 1]}
    assert (r.hits, r.to_json()["error_code"]) == (1, NOT_LEADER)


def test_a_probability_is_drawn_from_the_rule_s_seed():
    def picks(seed):
        r = rule(probability=0.3, seed=seed)
        return [error_rules.choose(r, produce()) for _ in range(200)]

    a, b, c = picks(11), picks(11), picks(12)
    assert a == b and a != c
    assert 40 <= sum(a) <= 80  # 0.3 of 200
    r = rule(probability=1.0, limit=3)
    assert sum(error_rules.choose(r, produce()) for _ in range(10)) == 3


@pytest.mark.parametrize("params, request_, chosen", [
    ({"transactional_id": "r.tx-0"}, produce(txn="r.tx-0"), True),
    ({"transactional_id": "r.tx-0"}, produce(txn="r.tx-1"), False),
    ({"transactional_id": "r.tx-0"}, produce(), False),
    ({"client_id": "app"}, produce(client="app"), True),
    ({"client_id": "app"}, produce(), False),
    ({"partition": 2}, produce(partitions=(0, 2)), True),
    ({"partition": 2}, produce(partitions=(0, 1)), False),
    ({"topic": "other"}, produce(), False),
    ({}, produce(acks=0), False),  # an acks=0 Produce gets no answer to forge
    ({"api": "end-txn"}, produce(key=26, partitions=()), True),
    ({"api": "end-txn"}, produce(), False),
])
def test_a_rule_matches_by_transactional_id_client_partition_and_api(params, request_, chosen):
    assert error_rules.choose(rule(next=1, **params), request_) is chosen


# ----- the order a refused answer reaches the client in ----------------------------------

class Conn:
    """What forging needs of a connection (verifier.harness.faults.connection)."""

    def __init__(self) -> None:
        self.id, self.client_id = 1, "verifier.generator.alo-0"
        self.pending: collections.deque = collections.deque()
        self.counters: collections.Counter = collections.Counter()
        self.to_client: asyncio.Queue = asyncio.Queue()


def test_a_refused_answer_waits_for_the_answers_due_before_it():
    """A client pairs answers with requests in order: a refused request's answer goes out
    only once every request sent before it is answered."""
    async def scenario():
        conn, r = Conn(), rule(next=5)
        conn.pending.append((7, 0, 9, None, None, None))  # forwarded, not answered yet
        first = encode_request(_produce(9), correlation_id=8, client_id="c")
        assert forging.refuse(conn, r, first, 8)
        assert conn.to_client.empty() and r.hits == 1
        conn.pending.popleft()  # the broker answered 7 (the connection forwards it)
        forging.send_refused(conn)
        _, sent = conn.to_client.get_nowait()
        assert response_correlation_id(sent[4:]) == 8 and not conn.pending
        second = encode_request(_produce(9), correlation_id=9, client_id="c")
        assert forging.refuse(conn, r, second, 9)  # nothing due before it: at once
        assert response_correlation_id(conn.to_client.get_nowait()[1][4:]) == 9
        assert conn.counters["errors_forged"] == 2 and r.hits == 2

    asyncio.run(scenario())


def test_a_refused_answer_with_ms_is_due_that_long_after_its_request():
    """``ms``: a broker slow to refuse (the KAFKA-19479 schedule's pieces answered after
    the client's flush() returned); the answer is queued for its due time, in order."""
    async def scenario():
        conn, r = Conn(), rule(next=5, ms=400)
        now = asyncio.get_running_loop().time()
        request = encode_request(_produce(9), correlation_id=8, client_id="c")
        assert forging.refuse(conn, r, request, 8)
        due, sent = conn.to_client.get_nowait()
        assert response_correlation_id(sent[4:]) == 8
        assert 0.4 <= due - now < 0.5, due - now

    asyncio.run(scenario())


@pytest.mark.parametrize(("params", "why"), [
    ({"ms": 300, "variant": "replace", "error": "REQUEST_TIMED_OUT"}, "for variant refuse"),
    ({"ms": -1}, ">= 0"),
])
def test_ms_is_a_refused_answers_delay_only(params, why):
    from verifier.harness.faults.rule_params import RuleError

    with pytest.raises(RuleError, match=why):
        rule(next=1, **params)


def test_an_answer_that_cannot_be_forged_goes_on_untouched_and_is_counted():
    """A version newer than kafka-python's schemas: the refused request is forwarded
    (refuse says so), the broker's answer is not rewritten; neither counts as forged."""
    async def scenario():
        conn, r = Conn(), rule(next=5)
        newer = bytearray(encode_request(_produce(13), correlation_id=3, client_id="c"))
        newer[2:4] = (14).to_bytes(2, "big")
        assert forging.refuse(conn, r, bytes(newer), 3) is False
        answer = b"\x00\x00\x00\x03" + bytes(20)
        assert forging.replace(conn, r, answer, API_PRODUCE, 14) == answer
        assert (r.hits, r.unforged, len(conn.pending), conn.to_client.empty()) == (0, 2, 0, True)

    asyncio.run(scenario())
