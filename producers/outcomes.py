"""The one place that decides what a kafka-python exception means for an operation.

Every operation in a history ends ``ok`` (it happened), ``fail`` (it definitely did not)
or ``info`` (it may or may not have happened). Nothing else in the project maps an
exception to an outcome; the generator asks :func:`classify` and writes what it says.

The table follows Jepsen's (shared notes, prior-art §1.1) adapted to kafka-python 3.0.12
(notes §8, §9):

- An exception raised *synchronously* by ``producer.send()`` means the record never entered
  the accumulator: ``fail``, whatever its class.
- A send future that fails with a request-validation error (too large, bad topic, no
  authorization, fenced epoch, out-of-order sequence, aborted batch) was rejected by the
  broker or never sent: ``fail``. Every retriable error (timeouts, batch expiry,
  disconnects, not-leader, not-enough-replicas) is ``info``: an earlier attempt of the same
  batch may have been appended before the response was lost. Anything unknown is ``info``:
  "I don't know" is a first-class answer.
- ``commit``: "Invalid transition ... READY" after a KIP-360 epoch bump means the broker
  already aborted the transaction (trap §9.2): ``fail``. A fenced, fatal or timed-out commit
  may have completed (a fencing ``init_transactions`` completes a commit already prepared):
  ``info``.
- ``abort``: the same "Invalid transition" means the transaction is already aborted:
  ``ok``. Everything else that goes wrong is ``info``.
"""

from __future__ import annotations

from enum import StrEnum

import kafka.errors as KE


class Outcome(StrEnum):
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


class CallTimedOut(KE.KafkaTimeoutError):
    """A kafka-python call without its own timeout (commit, abort, send_offsets) did not
    return within the generator's bound."""


#: the broker rejected the request, or the batch was never sent: definitely not written
SEND_DEFINITE_FAILURES: tuple[type[BaseException], ...] = (
    KE.MessageSizeTooLargeError,
    KE.RecordListTooLargeError,
    KE.InvalidTopicError,
    KE.AuthorizationError,  # topic, cluster and transactional-id authorization
    KE.CorruptRecordError,
    KE.InvalidRecordError,
    KE.InvalidTimestampError,
    KE.InvalidRequiredAcksError,
    KE.PolicyViolationError,
    KE.UnsupportedVersionError,
    KE.UnsupportedForMessageFormatError,
    KE.UnsupportedCompressionTypeError,
    KE.ProducerFencedError,
    KE.InvalidProducerEpochError,
    KE.OutOfOrderSequenceNumberError,
    KE.InvalidTxnStateError,
    KE.TransactionAbortedError,  # KIP-654: the batch was never drained
    KE.IllegalStateError,
    KE.KafkaConfigurationError,
)

OPERATIONS = ("enqueue", "send", "begin", "commit", "abort", "offsets", "init")


def is_invalid_transition(exc: BaseException) -> bool:
    """kafka-python's state-machine error after a silent KIP-360 epoch bump (trap §9.2):
    the broker has already aborted the open transaction and the producer is READY."""
    return (type(exc) is KE.KafkaError or isinstance(exc, KE.IllegalStateError)) and (
        "Invalid transition attempted from state READY" in str(exc)
    )


def is_fenced(exc: BaseException) -> bool:
    """Another producer with our transactional id took over (its epoch is higher)."""
    return isinstance(exc, KE.ProducerFencedError | KE.InvalidProducerEpochError) or (
        "ProducerFencedError" in str(exc)
    )


def needs_new_producer(exc: BaseException) -> bool:
    """True when the producer cannot go on: fenced, in FATAL_ERROR (kafka-python then
    raises a generic KafkaError "... in an error state"), closed, or hung in a call we
    bounded ourselves. The generator closes it and builds a new one."""
    if is_invalid_transition(exc):
        return False
    if is_fenced(exc) or isinstance(exc, CallTimedOut | KE.AuthorizationError):
        return True
    text = str(exc)
    return isinstance(exc, KE.KafkaError) and (
        "in an error state" in text or "already closed" in text or "FATAL_ERROR" in text
    )


def classify(exc: BaseException | None, op: str) -> Outcome:
    """The outcome of operation ``op`` (one of :data:`OPERATIONS`) that raised ``exc``
    (``None``: it returned normally)."""
    if op not in OPERATIONS:
        raise ValueError(f"unknown operation {op!r}; expected one of {OPERATIONS}")
    if exc is None:
        return Outcome.OK
    if op in ("enqueue", "begin"):
        # send() raised before appending; begin_transaction() is local, no RPC
        return Outcome.FAIL
    if op == "send":
        if isinstance(exc, KE.DuplicateSequenceNumberError):
            return Outcome.OK  # the broker already has it (kafka-python treats it so too)
        if isinstance(exc, SEND_DEFINITE_FAILURES):
            return Outcome.FAIL
        return Outcome.INFO
    if op == "commit":
        return Outcome.FAIL if is_invalid_transition(exc) else Outcome.INFO
    if op == "abort":
        return Outcome.OK if is_invalid_transition(exc) else Outcome.INFO
    if op == "init" and isinstance(exc, KE.KafkaConfigurationError | KE.AuthorizationError):
        return Outcome.FAIL
    return Outcome.INFO


def describe(exc: BaseException) -> str:
    """``"ExceptionClass: message"``, the history's ``error`` field."""
    return f"{type(exc).__name__}: {exc}"
