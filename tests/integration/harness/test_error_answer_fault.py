"""The error-answer fault on the real cluster (issue 50, docs/faults.md "Answering with an
error"): a *refused* Produce never reaches the broker, a *replaced* answer hides an append.

A kafka-python producer with retries=0 goes through the shared cluster's proxy; the rule
matches its client id only, so nothing else on the cluster is answered with an error. What
the broker did is read from the partition itself (its end offset and its records), not
from the proxy's counters.
"""

from __future__ import annotations

import kafka.errors as KE
import pytest
from kafka import KafkaConsumer, KafkaProducer

from verifier.harness.faults.control import ProxyClient
from verifier.harness.topics import create_topics, end_offsets, wait_in_sync

pytestmark = pytest.mark.integration

#: how many sends the rule answers with an error (``next``)
N = 3


def _producer(bootstrap: str, client_id: str) -> KafkaProducer:
    """One attempt per send (retries=0, so no idempotence): the client's outcome is the
    first answer it gets."""
    return KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks="all",
                         retries=0, enable_idempotence=False, linger_ms=0,
                         max_in_flight_requests_per_connection=1, request_timeout_ms=10000,
                         delivery_timeout_ms=30000)


def _values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=4000)
    try:
        return [m.value for m in consumer]
    finally:
        consumer.close()


def _end(bootstrap: str, topic: str) -> int:
    return end_offsets(bootstrap, [topic], "read_uncommitted")[(topic, 0)]


def _send_under_rule(bootstrap: str, proxies: ProxyClient, topic: str, variant: str,
                     error: str) -> tuple[list[Exception], dict, int, int]:
    """Warm up a producer, set the rule on its client id for the next N Produce requests,
    send N records one at a time, then one more after the rule is spent. (the errors the
    N sends ended with, the removed rule, the end offset before the N sends, the offset
    the record after them was written at)."""
    create_topics(bootstrap, {topic: 1}, replication_factor=3)
    wait_in_sync(bootstrap, [topic])  # a leader, so the warm-up's one attempt lands
    client_id = f"errproof-{topic}"
    producer = _producer(bootstrap, client_id)
    try:
        producer.send(topic, b"warm-up").get(timeout=30)  # metadata and connection ready
        before = _end(bootstrap, topic)
        forged_before = proxies.totals().get("errors_forged", 0)
        rule = proxies.add_rule(kind="error_answer", api="produce", error=error,
                                variant=variant, next=N, client_id=client_id)
        errors: list[Exception] = []
        for i in range(N):
            try:
                producer.send(topic, f"r{i}".encode()).get(timeout=30)
            except KE.KafkaError as exc:
                errors.append(exc)
        after = producer.send(topic, b"after").get(timeout=30).offset  # the rule is spent
    finally:
        producer.close(timeout=5)
    removed = proxies.remove_rule(rule["id"])
    assert proxies.totals().get("errors_forged", 0) - forged_before == N
    return errors, removed, before, after


def test_refused_produce_never_reaches_the_broker(bootstrap, proxies, topic_name):
    """NOT_LEADER_OR_FOLLOWER refused by the proxy: each send fails with it, and the
    partition's log did not grow: the record after them lands at the offset the log
    ended at before them."""
    errors, rule, before, after = _send_under_rule(
        bootstrap, proxies, topic_name, "refuse", "NOT_LEADER_OR_FOLLOWER")
    assert [type(e) for e in errors] == [KE.NotLeaderForPartitionError] * N, errors
    assert (rule["hits"], rule["chosen"], rule["unforged"]) == (N, N, 0), rule
    assert after == before, f"{after - before} refused records were appended"
    assert _values(bootstrap, topic_name) == [b"warm-up", b"after"]


def test_replaced_answer_hides_an_append(bootstrap, proxies, topic_name):
    """REQUEST_TIMED_OUT in place of the broker's answer: each send fails with it, yet
    the partition holds each of its records once, in order."""
    errors, rule, before, after = _send_under_rule(
        bootstrap, proxies, topic_name, "replace", "REQUEST_TIMED_OUT")
    assert [type(e) for e in errors] == [KE.RequestTimedOutError] * N, errors
    assert (rule["hits"], rule["chosen"], rule["unforged"]) == (N, N, 0), rule
    assert after == before + N, f"{after - before} of {N} replaced records were appended"
    assert _values(bootstrap, topic_name) == \
        [b"warm-up", *(f"r{i}".encode() for i in range(N)), b"after"]
