"""The exception classification table: every send, commit and abort outcome."""

from __future__ import annotations

import kafka.errors as KE
import pytest

from producers.outcomes import (
    CallTimedOut,
    Outcome,
    classify,
    is_invalid_transition,
    needs_new_producer,
)

OK, FAIL, INFO = Outcome.OK, Outcome.FAIL, Outcome.INFO
INVALID = KE.KafkaError("TransactionalId r.tx-0: Invalid transition attempted from state "
                        "READY to state COMMITTING_TRANSACTION")
INVALID_ABORT = KE.KafkaError("TransactionalId r.tx-0: Invalid transition attempted from "
                              "state READY to state ABORTING_TRANSACTION")
ERROR_STATE = KE.KafkaError("Cannot execute transactional method because we are in an error "
                            "state: ProducerFencedError")

TABLE = [
    # a send's future
    (None, "send", OK),
    (KE.KafkaTimeoutError("Expiring 3 record(s)"), "send", INFO),
    (KE.RequestTimedOutError(), "send", INFO),
    (KE.KafkaConnectionError(), "send", INFO),
    (KE.NotLeaderForPartitionError(), "send", INFO),
    (KE.NetworkExceptionError(), "send", INFO),
    (KE.NotEnoughReplicasError(), "send", INFO),
    (KE.NotEnoughReplicasAfterAppendError(), "send", INFO),
    (KE.UnknownError(), "send", INFO),
    (KE.UnknownTopicOrPartitionError(), "send", INFO),
    (RuntimeError("something new"), "send", INFO),
    (KE.MessageSizeTooLargeError(), "send", FAIL),
    (KE.RecordListTooLargeError(), "send", FAIL),
    (KE.InvalidTopicError(), "send", FAIL),
    (KE.TopicAuthorizationFailedError(), "send", FAIL),
    (KE.ProducerFencedError(), "send", FAIL),
    (KE.InvalidProducerEpochError(), "send", FAIL),
    (KE.OutOfOrderSequenceNumberError(), "send", FAIL),
    (KE.TransactionAbortedError(), "send", FAIL),
    (KE.DuplicateSequenceNumberError(), "send", OK),
    # send() raised: the record never entered the accumulator
    (KE.KafkaTimeoutError("metadata"), "enqueue", FAIL),
    (KE.IllegalStateError("closed"), "enqueue", FAIL),
    (KE.KafkaError("Cannot perform send because at least one previous transactional or "
                   "idempotent request has failed"), "enqueue", FAIL),
    # transactions
    (None, "begin", OK),
    (KE.IllegalStateError("wrong state"), "begin", FAIL),
    (None, "commit", OK),
    (INVALID, "commit", FAIL),
    (KE.ProducerFencedError(), "commit", INFO),
    (ERROR_STATE, "commit", INFO),
    (CallTimedOut("commit_transaction"), "commit", INFO),
    (KE.KafkaTimeoutError(), "commit", INFO),
    (None, "abort", OK),
    (INVALID_ABORT, "abort", OK),
    (KE.ProducerFencedError(), "abort", INFO),
    (CallTimedOut("abort_transaction"), "abort", INFO),
    (KE.KafkaConfigurationError(), "init", FAIL),
    (KE.KafkaTimeoutError(), "init", INFO),
]


@pytest.mark.parametrize("exc, op, expected", TABLE,
                         ids=[f"{op}-{type(e).__name__}" for e, op, _ in TABLE])
def test_classification(exc, op, expected):
    assert classify(exc, op) is expected


def test_unknown_operation():
    with pytest.raises(ValueError, match="unknown operation"):
        classify(None, "produce")


def test_invalid_transition_and_replacement():
    assert is_invalid_transition(INVALID) and is_invalid_transition(INVALID_ABORT)
    assert not needs_new_producer(INVALID)
    assert not is_invalid_transition(KE.KafkaError("other"))
    for exc in (KE.ProducerFencedError(), ERROR_STATE, CallTimedOut("x"),
                KE.IllegalStateError("KafkaProducer already closed!")):
        assert needs_new_producer(exc), exc
    assert not needs_new_producer(KE.KafkaTimeoutError())
