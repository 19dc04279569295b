"""The kafka-python emitter's completion bookkeeping: which send's line is written when.

The producer here only hands out kafka-python's own ``Future`` objects, which the test
completes as the I/O thread would; everything the emitter does with them is real.
"""

from __future__ import annotations

import threading
import time
from collections import namedtuple

import orjson
import pytest
from kafka.errors import KafkaTimeoutError, MessageSizeTooLargeError
from kafka.future import Future

from producers.emitter import Emitter, Pacer
from producers.generator import final_flush
from verifier.rundata.errors import ClusterUnreachable

Meta = namedtuple("Meta", "offset")
SIZE = 200  # bytes of each record value


class Sent(Future):
    """A send's future; ``get`` plays the wait for the broker's answer."""

    __slots__ = ("answer",)

    def __init__(self) -> None:
        super().__init__()
        self.answer = None  # what get() completes it with; None: it times out

    def get(self, timeout=None):
        if self.answer is not None and not self.is_done:
            self.success(self.answer)
        if not self.is_done:
            raise KafkaTimeoutError("no answer")
        if self.exception is not None:
            raise self.exception
        return self.value


class Producer:
    def __init__(self) -> None:
        self.sent: dict[tuple[int, int], Sent] = {}
        self.flush_raises = False

    def send(self, topic, value, key, partition):
        _, p, seq = key.decode().split(":")
        fut = self.sent[(int(p), int(seq))] = Sent()
        return fut

    def flush(self, timeout=None):
        if self.flush_raises:
            raise KafkaTimeoutError("flush")


class Lines:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def write_raw(self, data: bytes) -> None:
        self.rows += [orjson.loads(x) for x in data.splitlines()]

    def done(self) -> list[tuple[str, int, int]]:
        return [(r["type"], r["p"], r["seq"]) for r in self.rows
                if r.get("f") == "send" and r["type"] != "invoke"]


def emitter(producer, lines, buffer_memory=1 << 30, acks=-1) -> Emitter:
    return Emitter(producer, lines, topic="t", run="r", pid="w", ses=1, record_size=SIZE,
                   buffer_memory=buffer_memory, acks=acks, completion_timeout_s=1.0)


def test_a_partitions_sends_are_written_in_send_order():
    prod, lines = Producer(), Lines()
    em = emitter(prod, lines)
    em.send_many([(0, 0), (0, 1), (1, 0)])
    prod.sent[(0, 1)].success(Meta(11))
    prod.sent[(1, 0)].success(Meta(20))
    em.write_completions()
    assert lines.done() == [("ok", 1, 0)]  # (0, 1) waits for (0, 0)
    prod.sent[(0, 0)].success(Meta(10))
    em.write_completions()
    assert lines.done() == [("ok", 1, 0), ("ok", 0, 0), ("ok", 0, 1)]
    assert [r["offset"] for r in lines.rows if r["type"] == "ok"] == [20, 10, 11]


def test_completions_ride_on_the_next_chunks_write_before_its_invokes():
    prod, lines = Producer(), Lines()
    em = emitter(prod, lines)
    em.send_many([(0, 0)])
    prod.sent[(0, 0)].success(Meta(5))
    em.send_many([(0, 1)])
    kinds = [(r["type"], r["seq"]) for r in lines.rows if r.get("f") == "send"]
    assert kinds == [("invoke", 0), ("ok", 0), ("invoke", 1)]


def test_failures_are_classified_and_unanswered_sends_get_no_line():
    prod, lines = Producer(), Lines()
    em = emitter(prod, lines)
    em.send_many([(0, 0), (1, 0), (2, 0)])
    prod.sent[(0, 0)].failure(MessageSizeTooLargeError())
    prod.sent[(1, 0)].failure(KafkaTimeoutError("expired"))
    em.write_completions()
    types = {r["p"]: r["type"] for r in lines.rows if r["type"] != "invoke"}
    assert types[0] == "fail" and types[1] == "info" and 2 not in types


def test_the_end_of_a_session_writes_every_completed_send_whatever_its_place():
    prod, lines = Producer(), Lines()
    em = emitter(prod, lines)
    em.send_many([(0, 0), (0, 1), (0, 2)])
    prod.sent[(0, 2)].success(Meta(3))
    prod.flush_raises = True
    with pytest.raises(KafkaTimeoutError):
        em.flush(0.0)
    assert lines.done() == [("ok", 0, 2)]
    assert em.unanswered() == 2
    with pytest.raises(ClusterUnreachable, match="after 0 s with 2 sends unanswered"):
        final_flush(em, 0.0)  # one line for the run's notes, not a traceback
    prod.sent[(0, 0)].success(Meta(1))
    em.write_completions()
    assert lines.done() == [("ok", 0, 2), ("ok", 0, 0)]  # no line twice


def test_a_replaced_producers_sends_neither_block_nor_vanish():
    old, new, lines = Producer(), Producer(), Lines()
    em = emitter(old, lines)
    em.send_many([(0, 0), (0, 1)])
    em.replace_producer(new)
    em.send_many([(0, 2)])
    new.sent[(0, 2)].success(Meta(7))
    old.sent[(0, 1)].failure(MessageSizeTooLargeError())
    em.write_completions()
    assert sorted(lines.done()) == [("fail", 0, 1), ("ok", 0, 2)]
    old.sent[(0, 0)].failure(KafkaTimeoutError("closed"))
    em.write_completions()
    assert ("info", 0, 0) in lines.done() and len(lines.done()) == 3


def test_the_bytes_in_flight_stay_under_the_bound_waiting_for_the_furthest_behind():
    prod, lines = Producer(), Lines()
    em = emitter(prod, lines, buffer_memory=3 * SIZE)
    em.send_many([(0, 0), (0, 1), (1, 0)])
    for fut in prod.sent.values():
        fut.answer = Meta(0)
    em.send_many([(2, 0)])  # one wait: (0, 0), the oldest of the longest partition
    assert [k for k, f in prod.sent.items() if f.is_done] == [(0, 0)]
    assert lines.done() == [("ok", 0, 0)]
    assert em._inflight_bytes == 3 * SIZE


def test_a_send_that_never_completes_stops_counting_and_is_written_when_it_does():
    prod, lines = Producer(), Lines()
    em = emitter(prod, lines, buffer_memory=2 * SIZE)
    em.send_many([(0, 0), (0, 1)])
    prod.sent[(0, 1)].answer = Meta(2)
    em.send_many([(0, 2)])  # (0, 0) times out: set aside, the bound holds again
    assert em._inflight_bytes == 2 * SIZE
    prod.sent[(0, 1)].success(Meta(2))
    prod.sent[(0, 0)].success(Meta(1))
    em.write_completions()
    assert sorted(lines.done()) == [("ok", 0, 0), ("ok", 0, 1)]


def test_a_long_pause_writes_completions_on_the_way():
    calls = []
    pacer = Pacer(10.0, threading.Event())  # one record per 0.1 s
    start = time.monotonic()
    pacer.pace(lambda: calls.append(time.monotonic()), 1)
    assert time.monotonic() - start >= 0.09
    assert len(calls) >= 3  # about every 0.02 s, not once before the whole pause


def test_a_stop_ends_a_pause_at_once():
    stop = threading.Event()
    stop.set()
    pacer = Pacer(0.1, stop)  # one record per 10 s
    start = time.monotonic()
    pacer.pace(None, 1)
    assert time.monotonic() - start < 1.0
