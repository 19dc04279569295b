"""How many records a transaction takes: the workload's size, or what is already due."""

from __future__ import annotations

import threading

import pytest

import producers.emitter as emitter_mod
from producers.emitter import Pacer
from producers.transactional import MAX_TXN_SECONDS, txn_size


@pytest.fixture
def clock(monkeypatch):
    """The pacer's monotonic clock, set by the test."""
    now = [1000.0]
    monkeypatch.setattr(emitter_mod.time, "monotonic", lambda: now[0])
    return now


def pacer_at(clock, rate: float | None, elapsed_s: float, paced: int) -> Pacer:
    pacer = Pacer(rate, threading.Event())
    pacer.n = paced
    clock[0] += elapsed_s
    return pacer


def test_on_schedule_a_transaction_has_the_workloads_size(clock):
    # 200 records/s: 0.05 s in, 10 records due and 10 sent
    assert txn_size(10, pacer_at(clock, 200.0, 0.05, 10)) == 10
    assert txn_size(10, pacer_at(clock, 200.0, 0.0, 0)) == 10


def test_behind_schedule_a_transaction_takes_every_record_due(clock):
    # the previous commit took 0.5 s: 100 records are due, one transaction carries them
    pacer = pacer_at(clock, 200.0, 0.552, 10)
    assert pacer.due() == 100
    assert txn_size(10, pacer) == 100


def test_a_transaction_holds_at_most_max_txn_seconds_of_records(clock):
    # a 30 s stall (a fault): catch up in transactions of MAX_TXN_SECONDS each
    assert txn_size(10, pacer_at(clock, 200.0, 30.0, 0)) == int(200 * MAX_TXN_SECONDS)
    # a slow rate never goes below the workload's size
    assert txn_size(10, pacer_at(clock, 2.0, 30.0, 0)) == 10


def test_unbounded_rate_keeps_the_workloads_size(clock):
    pacer = pacer_at(clock, None, 30.0, 0)
    assert pacer.due() == 0
    assert txn_size(10, pacer) == 10


def test_a_producer_in_fatal_error_never_initializes_and_is_replaced():
    """The trap connect() steps around: kafka-python keeps a producer whose InitProducerId
    failed in FATAL_ERROR, and every later init_transactions() raises "Invalid
    transition" (seen forever on 4.4.0 in the container tier, 2026-11-29); such a producer
    is told apart so that the retry goes on with a new one. No broker: the state is set
    as kafka-python's own error handler sets it."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    from kafka.producer.transaction_manager import TransactionState

    from producers.transactional import init_failed_for_good

    producer = KafkaProducer(bootstrap_servers="127.0.0.1:9", api_version=(3, 0),
                             transactional_id="t", max_block_ms=100)
    try:
        assert not init_failed_for_good(producer)
        producer._transaction_manager._transition_to(TransactionState.FATAL_ERROR,
                                                     error=KafkaError("InitProducerId timed out"))
        assert init_failed_for_good(producer)
        with pytest.raises(KafkaError, match="Invalid transition"):
            producer.init_transactions()
        assert init_failed_for_good(producer)
    finally:
        producer.close(timeout=0)
