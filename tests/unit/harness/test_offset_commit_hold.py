"""KAFKA-15449's hold: a TxnOffsetCommit of a transaction meant to abort (the copier writes
the intent in its offsets' metadata), its group's __consumer_offsets partition watched for
the abort marker."""

from __future__ import annotations

import asyncio
import collections
import socket
import struct
import threading

import pytest

from tests.unit.harness.test_kafka_log import list_offsets_response
from verifier.harness.faults import marker_probe
from verifier.harness.faults.holds import Holds
from verifier.harness.faults.marker_probe import MarkerProbe, group_partition
from verifier.harness.faults.rules import Rule, RuleError, RuleSet
from verifier.harness.kafka_wire import (
    API_TXN_OFFSET_COMMIT,
    PartitionInfo,
    RequestHeader,
    encode_request_header,
    request_identity,
    response_summary,
)


def encode_string(value: str) -> bytes:
    """A (non-compact) string as requests before their flexible versions carry it."""
    return struct.pack(">h", len(value.encode())) + value.encode()


def txn_offset_commit(txn: str, group: str, metadata: str, pid: int = 7, epoch: int = 0,
                      partitions=(0, 1)) -> bytes:
    """A TxnOffsetCommit v2 (not flexible) as a client sends it: transactional id, group,
    producer id and epoch, then per topic the partitions' offsets with their metadata."""
    body = encode_string(txn) + encode_string(group) + struct.pack(">qh", pid, epoch)
    body += struct.pack(">i", 1) + encode_string("in") + struct.pack(">i", len(partitions))
    for p in partitions:
        body += struct.pack(">iqi", p, 10 * (p + 1), -1) + encode_string(metadata)
    header = RequestHeader(API_TXN_OFFSET_COMMIT, 2, 5, "copier-0")
    return encode_request_header(header) + body


def test_a_txn_offset_commit_names_its_group_and_what_its_transaction_means():
    ident = request_identity(txn_offset_commit("run.copier-0", "run.copier-0",
                                               '{"abort":true}', pid=42, epoch=3))
    assert (ident.transactional_id, ident.group_id, ident.producer_id, ident.producer_epoch,
            ident.records_abort) == ("run.copier-0", "run.copier-0", 42, 3, True)
    assert ident.to_json()["group_id"] == "run.copier-0"
    meant = request_identity(txn_offset_commit("t", "g", '{"abort":false}'))
    assert meant.records_abort is False
    assert request_identity(txn_offset_commit("t", "g", "")).records_abort is None


HOLD = {"kind": "hold", "api_keys": [28], "records": "abort", "transactional_id": "t",
        "client_view": "copy", "after_marker": "abort", "release_after_ms": 1000,
        "release_on": {"api_key": 0, "direction": "response", "transactional_id": "t",
                       "records": "commit"}}


def test_records_holds_only_the_commit_of_a_transaction_meant_to_abort():
    rule = Rule.from_json(HOLD, 1)
    assert not rule.decide_hold(request_identity(txn_offset_commit("t", "g", '{"abort":false}')))
    assert rule.decide_hold(request_identity(txn_offset_commit("t", "g", '{"abort":true}')))
    assert Rule.from_json(HOLD, 1).to_json()["records"] == "abort"


@pytest.mark.parametrize("extra, fragment", [
    ({"records": "maybe"}, "records must be"),
    ({"records": "abort", "api_keys": [26], "after_marker": None}, "records must be"),
    ({"api_keys": [26]}, "after_marker must be"),
])
def test_bad_offset_commit_holds(extra, fragment):
    with pytest.raises(RuleError, match=fragment):
        Rule.from_json({**HOLD, **extra}, 1)


def test_a_groups_partition_is_javas_string_hash_code():
    # "test".hashCode() == 3556498; "polygenelubricants".hashCode() == Integer.MIN_VALUE,
    # which Kafka's Utils.abs makes 0
    assert group_partition("test", 2**31 - 1) == 3556498
    assert group_partition("polygenelubricants", 4) == 0
    assert group_partition("test", 4) == 3556498 % 4
    # a negative hash: Utils.abs is Math.abs (the probe's & 0x7fffffff gave partition 1, and
    # the abort marker was looked for there in vain, 2026-11-28 13:14)
    negative = "kafka-15449-20261128T131424Z-rep1of3-s1.copier-0"  # hashCode -1545249031
    assert group_partition(negative, 2**31 - 1) == 1545249031
    assert group_partition(negative, 4) == 3


def test_the_marker_of_an_offset_commit_is_looked_for_in_its_groups_partition(monkeypatch):
    asked = []

    def metadata(host, port, topics, timeout=3.0):
        asked.append((port, topics))
        return [PartitionInfo("__consumer_offsets", p, 1, (1,), (1,)) for p in range(4)]

    monkeypatch.setattr(marker_probe, "metadata_partitions", metadata)
    probe = MarkerProbe(lambda broker: ("127.0.0.1", 9000 + broker), [1])
    commit = request_identity(txn_offset_commit("t", "test", '{"abort":true}'))
    assert probe.where(commit, None, None, 1) == ("__consumer_offsets", 3556498 % 4)
    assert probe.where(commit, None, None, 1) == ("__consumer_offsets", 3556498 % 4)
    assert asked == [(9001, ["__consumer_offsets"])]  # the count is asked once


def test_an_offset_commits_answer_says_its_partitions_error():
    # TxnOffsetCommit v2: throttle time, then per topic the partitions' error codes
    body = struct.pack(">ii", 5, 0) + struct.pack(">i", 1) + encode_string("in")
    body += struct.pack(">i", 2) + struct.pack(">ih", 0, 0) + struct.pack(">ih", 1, 48)
    assert response_summary(body, API_TXN_OFFSET_COMMIT, 2) == {"error_code": 48}
    ok = struct.pack(">ii", 5, 0) + struct.pack(">i", 1) + encode_string("in") + \
        struct.pack(">i", 1) + struct.pack(">ih", 0, 0)
    assert response_summary(ok, API_TXN_OFFSET_COMMIT, 2) == {"error_code": 0}


class _Conn:
    broker, id, held_open, stalled, deferred = 1, 3, 0, False, None

    def __init__(self):
        self.counters = collections.Counter()


def test_a_request_a_copy_rules_gate_delays_is_the_clients_own():
    # the copy's answer is never the client's; the AddOffsetsToTxn its gate held back is
    rules = RuleSet()
    rule = rules.add({**HOLD, "then_hold": {"api_keys": [25], "max_ms": 1000}})
    holds = Holds(rules, lambda broker: ("127.0.0.1", 1), [1])
    conn = _Conn()
    payload = txn_offset_commit("t", "g", '{"abort":false}')
    holds.gate(rule, conn, payload, request_identity(payload), -1)
    (*_, held), = conn.deferred
    assert held.gated and not held.copy


def test_a_copys_start_is_read_before_its_original_goes_on():
    # the copy's original may end its transaction within milliseconds: the partition's
    # high watermark is asked at once (blocking), not by a task that may come too late
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer():
        conn, _ = server.accept()
        with conn:
            size = struct.unpack(">i", conn.recv(4))[0]
            while size > 0:
                size -= len(conn.recv(size))
            reply = list_offsets_response("__consumer_offsets", 2, 16)
            conn.sendall(struct.pack(">i", len(reply)) + reply)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()

    async def hold():
        probe = MarkerProbe(lambda broker: ("127.0.0.1", port), [1])
        probe.note_hold(1, 1, ("__consumer_offsets", 2), now=True)
        (watch,) = probe._watches.values()
        done = watch.start.done()  # before the loop ran anything else
        probe.close()
        return done, watch.start.result()

    assert asyncio.run(hold()) == (True, 16)
    thread.join(5)
    server.close()


def _uvarint(n: int) -> bytes:
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _compact(value: str) -> bytes:
    return _uvarint(len(value.encode()) + 1) + value.encode()


def test_a_v5_txn_offset_commit_kafka_python_cannot_read_is_still_identified():
    """The Java client 4.4.0's TxnOffsetCommit v5: kafka-python's schema fails on its topics
    (a hold on a Java application's TxnOffsetCommit matched none, 2026-11-30), yet its
    transactional id, group, producer id and epoch, which every version begins with, are
    read, so the hold matches it."""
    header = (struct.pack(">hhi", API_TXN_OFFSET_COMMIT, 5, 9) + encode_string("cli")
              + _uvarint(0))  # request header v2: no tagged fields
    body = (_compact("run.app.copier.0") + _compact("run.app.copier")
            + struct.pack(">qh", 42, 3) + struct.pack(">i", 5) + _compact("member")
            + _uvarint(0)  # no group instance id
            + _uvarint(2) + bytes.fromhex("a0f42875da4b719674f13320d9b4ea03"))  # topic bytes
    who = request_identity(header + body)
    assert (who.transactional_id, who.group_id, who.producer_id, who.producer_epoch) == \
        ("run.app.copier.0", "run.app.copier", 42, 3)
    rule = Rule(id=1, kind="hold", api_keys=(API_TXN_OFFSET_COMMIT,),
                transactional_id="run.app.copier.0")
    assert rule.hold_matches(who)


def test_a_v5_txn_offset_commit_answer_names_its_topics_by_id_and_is_read():
    """Its answer too (a 4.4.0 broker's to the Java client: each topic by its 16-byte id,
    which kafka-python 3.0.12 reads as a name): the partitions' first error is read by
    hand (the copy a rebalance released was refused INVALID_PRODUCER_EPOCH, 47); one
    that does not end where its topics do is not guessed."""
    topic_id = bytes.fromhex("10b852171a47b394457fcdb54bf27b03")
    body = (struct.pack(">i", 0) + _uvarint(2) + topic_id + _uvarint(3)
            + struct.pack(">ih", 0, 0) + _uvarint(0) + struct.pack(">ih", 1, 47) + _uvarint(0)
            + _uvarint(0) + _uvarint(0))
    answer = struct.pack(">i", 8) + _uvarint(0) + body  # response header v1
    assert response_summary(answer, API_TXN_OFFSET_COMMIT, 5) == {"error_code": 47}
    with pytest.raises(Exception, match="left after its topics"):
        response_summary(answer + b"\x00", API_TXN_OFFSET_COMMIT, 5)
