"""A wait for a send ends soon after the session's stop, not at the send's deadline.

kafka-python left the futures of a fenced producer's aborted transaction unresolved: the
generator's clean stop waited for them until the run killed it 90 s later. The futures
here are kafka-python's own, unresolved because nothing sends them."""

import threading
import time

import pytest
from kafka.errors import KafkaTimeoutError
from kafka.producer.future import FutureProduceResult, FutureRecordMetadata
from kafka.structs import TopicPartition

from producers import emitter as emitter_mod
from producers import outcomes
from producers.emitter import Emitter


def _future():
    produced = FutureProduceResult(TopicPartition("t", 0))
    return produced, FutureRecordMetadata(produced, 0, -1, None, 1, 1, 0)


def _emitter(completion_timeout_s: float) -> Emitter:
    return Emitter(None, None, topic="t", run="r", pid="p", ses=1, record_size=10,
                   buffer_memory=1 << 20, acks=-1, completion_timeout_s=completion_timeout_s)


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    monkeypatch.setattr(emitter_mod, "STOP_GRACE_S", 0.4)
    monkeypatch.setattr(emitter_mod, "WAIT_STEP_S", 0.05)


def test_an_unanswered_send_is_given_up_a_grace_after_the_stop():
    em = _emitter(60)
    em.stop = threading.Event()
    em.stop.set()
    _, fut = _future()
    t0 = time.monotonic()
    exc = em.wait(fut)
    assert isinstance(exc, outcomes.CallTimedOut), exc
    assert 0.35 <= time.monotonic() - t0 < 5
    assert not fut.is_done


def test_without_a_stop_the_wait_lasts_until_the_sends_deadline():
    em = _emitter(1.0)
    em.stop = threading.Event()
    _, fut = _future()
    t0 = time.monotonic()
    exc = em.wait(fut)
    assert isinstance(exc, KafkaTimeoutError) and not isinstance(exc, outcomes.CallTimedOut)
    assert time.monotonic() - t0 >= 0.95


def test_a_send_answered_after_the_stop_within_the_grace_is_acknowledged():
    em = _emitter(60)
    em.stop = threading.Event()
    em.stop.set()
    produced, fut = _future()
    threading.Timer(0.15, lambda: produced.success((5, -1, None))).start()
    assert em.wait(fut) is None
    assert fut.is_done and fut.value.offset == 5
