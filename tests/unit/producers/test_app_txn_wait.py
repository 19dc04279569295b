"""The kafka-python transactional copier's bounded commit steps (producers.app_txn_wait):
a step whose result never comes gives up after the limit, as the Java client's
sendOffsetsToTransaction does after max.block.ms, instead of waiting for good.

The producer here is a stand-in for kafka-python's KafkaProducer (its transaction
manager and sender), not for a broker: its results are kafka-python's own
TransactionalRequestResult, completed or never, as the client's Sender completes them
or (having dropped the request: docs/findings/kafka-python-txn-offset-commit-drop.md)
never does.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from kafka.errors import ProducerFencedError
from kafka.producer.transaction_manager import TransactionalRequestResult

from producers import app_copier
from producers import app_txn_wait as bounded


class _Sender:
    def __init__(self) -> None:
        self.woken = 0

    def wakeup(self) -> None:
        self.woken += 1


class _TxnManager:
    """Results in the order the copier asks for them: offsets, then the commit."""

    def __init__(self, offsets: TransactionalRequestResult,
                 commit: TransactionalRequestResult) -> None:
        self.offsets_result, self.commit_result = offsets, commit
        self.asked: list[str] = []

    def send_offsets_to_transaction(self, offsets, group_metadata):
        self.asked.append("offsets")
        return self.offsets_result

    def begin_commit(self):
        self.asked.append("commit")
        return self.commit_result


class _Producer:
    """kafka-python 3.0.12's KafkaProducer as far as the copier's last two steps use it;
    its public methods wait as kafka-python's do (``result.wait()``, no limit)."""

    def __init__(self, offsets, commit, max_block_ms: int = 60_000) -> None:
        self.config = {"max_block_ms": max_block_ms}
        self._transaction_manager = _TxnManager(offsets, commit)
        self._sender = _Sender()

    def send_offsets_to_transaction(self, offsets, group_metadata):
        result = self._transaction_manager.send_offsets_to_transaction(offsets, group_metadata)
        self._sender.wakeup()
        result.wait()

    def commit_transaction(self):
        result = self._transaction_manager.begin_commit()
        self._sender.wakeup()
        result.wait()


def _done(error=None) -> TransactionalRequestResult:
    r = TransactionalRequestResult()
    r.done(error)
    return r


def _finish_in_thread(producer, limit_s: float, within_s: float = 5.0):
    """What ``bounded.finish`` raised (or None), or "hung" if it had not returned after
    ``within_s``: the old code, an unbounded wait, hangs here."""
    said: list = []

    def go() -> None:
        try:
            bounded.finish(producer, {}, "group", limit_s)
            said.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            said.append(exc)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(within_s)
    return said[0] if said else "hung"


def test_offsets_never_answered_give_up_after_the_limit_and_no_commit_is_asked():
    producer = _Producer(TransactionalRequestResult(), _done())
    start = time.monotonic()
    raised = _finish_in_thread(producer, limit_s=0.3)
    took = time.monotonic() - start
    assert isinstance(raised, bounded.CommitGaveUp), raised
    assert raised.call == "send_offsets_to_transaction"
    assert 0.3 <= raised.waited_s < 2.0 and took < 2.0
    # the transaction is failed: the copier must not go on to commit it
    assert producer._transaction_manager.asked == ["offsets"]
    assert producer._sender.woken == 1


def test_a_commit_never_answered_gives_up_too():
    producer = _Producer(_done(), TransactionalRequestResult())
    raised = _finish_in_thread(producer, limit_s=0.2)
    assert isinstance(raised, bounded.CommitGaveUp) and raised.call == "commit_transaction"
    assert producer._transaction_manager.asked == ["offsets", "commit"]


def test_answered_steps_pass_and_an_answered_error_is_raised_as_itself():
    assert _finish_in_thread(_Producer(_done(), _done()), limit_s=0.2) is None
    fenced = ProducerFencedError()
    assert _finish_in_thread(_Producer(_done(fenced), _done()), limit_s=0.2) is fenced


def test_the_decision_and_the_limit_the_producer_sets():
    assert bounded.gave_up(True, "commit_transaction", 99.0) is None
    failure = bounded.gave_up(False, "commit_transaction", 60.04)
    assert isinstance(failure, bounded.CommitGaveUp)
    assert failure.state_fields() == {"call": "commit_transaction", "waited_s": 60.0}
    assert "within 60.0 s" in str(failure)
    assert bounded.limit_of(_Producer(None, None, max_block_ms=1500)) == 1.5


def test_a_producer_without_the_internals_is_refused_clearly():
    class Other:
        config: dict = {}

    with pytest.raises(RuntimeError, match="_transaction_manager"):
        bounded.finish(Other(), {}, "group", 0.1)


def test_the_state_file_keeps_which_call_was_given_up_and_after_how_long(tmp_path):
    path = tmp_path / "0.state.json"
    path.write_text(json.dumps({"batches": 7, "errors": []}))
    app_copier.record_error(str(path), bounded.CommitGaveUp("send_offsets_to_transaction",
                                                            60.02))
    app_copier.record_error(str(path), ValueError("other"))
    first, second = json.loads(path.read_text())["errors"]
    assert first["type"] == "CommitGaveUp" and first["batches"] == 7
    assert (first["call"], first["waited_s"]) == ("send_offsets_to_transaction", 60.0)
    assert "call" not in second and "waited_s" not in second


def _sent(*exceptions):
    """kafka-python futures of a batch's sends: done (None: written) or failed."""
    from kafka.future import Future

    out = []
    for exc in exceptions:
        f = Future()
        f.success("metadata") if exc is None else f.failure(exc)
        out.append(f)
    return out


def test_a_record_not_written_after_the_flush_fails_the_transaction():
    # kafka-python fails an expired batch without making the transaction abortable, and
    # flush() only logs it: committing then commits offsets of records never written
    from kafka.errors import KafkaTimeoutError
    from kafka.future import Future

    expired = KafkaTimeoutError("Expiring 29 record(s) for out-0: 120001 ms has passed")
    failure = bounded.not_written(_sent(None, expired, expired, None))
    assert isinstance(failure, bounded.RecordsNotWritten)
    assert (failure.failed, failure.of) == (2, 4) and "KafkaTimeoutError" in str(failure)
    pending = bounded.not_written([*_sent(None), Future()])
    assert isinstance(pending, bounded.RecordsNotWritten) and pending.failed == 1
    assert bounded.not_written(_sent(None, None)) is None
    assert bounded.not_written([]) is None
