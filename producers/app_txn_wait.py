"""The transactional copier's two blocking calls with a limit, and the check of its sends
before the commit, as a careful service writes them on kafka-python (issue 47).

kafka-python 3.0.12's ``KafkaProducer.send_offsets_to_transaction`` and
``commit_transaction`` enqueue a request and wait for its result without a limit
(``result.wait()``). When the request is lost inside the client, the call never returns:
under ``group-coordinator-kill`` its ``Sender`` dropped a TxnOffsetCommit whose cached
group coordinator was dead (docs/findings/kafka-python-txn-offset-commit-drop.md), and
the copier waited until the tool stopped it. The Java client gives up after
``max.block.ms`` (KAFKA-10309, KAFKA-7763) with a ``TimeoutException``; this module does
the same with the producer's own ``max_block_ms`` (kafka-python's default 60 s, the bound
its ``init_transactions`` already keeps) and raises :class:`CommitGaveUp`.

What the caller does then (``producers.app_copier``): treat the transaction as failed,
close both clients and start over: a new producer with the same ``transactional.id``
(its InitProducerId fences the stuck one and makes the coordinator abort its open
transaction) and a new consumer in the group (it resumes from the group's committed
offsets, which the lost commit never moved). The stuck producer is not asked to abort:
its request queue is the one that lost a request, and an abort goes through that queue.
(The tool's own transactional generator bounds the same calls with a helper thread,
``producers.transactional.bounded``: public calls only, a thread left waiting per timeout.)
"""

from __future__ import annotations

import time

#: how many seconds, when the producer says nothing (kafka-python's ``max_block_ms``
#: default, which is also the Java client's ``max.block.ms``)
DEFAULT_LIMIT_S = 60.0


class CommitGaveUp(Exception):
    """A transaction's step got no answer within the limit: the transaction is failed."""

    def __init__(self, call: str, waited_s: float) -> None:
        super().__init__(f"{call} gave no answer within {waited_s:.1f} s: the transaction is "
                         "failed (a new producer with the same transactional.id aborts it)")
        self.call, self.waited_s = call, waited_s

    def state_fields(self) -> dict:
        """What the state file's error entry adds (``call``, ``waited_s``): the verdict's
        note that the instance gave up (verifier.judge.app_gave_up)."""
        return {"call": self.call, "waited_s": round(self.waited_s, 1)}


def gave_up(done: bool, call: str, waited_s: float) -> CommitGaveUp | None:
    """The decision after a bounded wait: None when the result came (its error, if any,
    has been raised by the wait), else the failure to raise."""
    return None if done else CommitGaveUp(call, waited_s)


class RecordsNotWritten(Exception):
    """A record of the transaction failed after the flush: the transaction is failed.

    kafka-python 3.0.12 fails a batch that reached its ``delivery_timeout_ms`` (a
    ``KafkaTimeoutError``, retriable) "without any state transition" (its Sender): the
    transaction stays committable, and ``flush()`` only logs the failure. The Java client
    makes the transaction abortable instead, so its ``commitTransaction`` throws. Under
    group-coordinator-kill (2026-11-30 00:43) a copier whose transaction coordinator was
    killed committed a transaction's offsets without its 60 records (lost at both
    isolation levels) after a 120-s stall: its batches expired, most likely because its
    AddPartitionsToTxn was dropped like the TxnOffsetCommit (docs/findings)."""

    def __init__(self, failed: int, of: int, first: BaseException | None) -> None:
        super().__init__(f"{failed} of {of} records of the transaction not written after the "
                         f"flush ({type(first).__name__ if first else 'not done'}: {first}): "
                         "the transaction is failed")
        self.failed, self.of = failed, of


def not_written(futures) -> RecordsNotWritten | None:
    """After ``flush()``: the failure to raise if any send's future failed or is not
    done (kafka-python's futures: ``is_done``, ``exception``), else None."""
    futures = list(futures)
    bad = [f for f in futures if not f.is_done or f.exception is not None]
    if not bad:
        return None
    return RecordsNotWritten(len(bad), len(futures), next(
        (f.exception for f in bad if f.exception is not None), None))


def limit_of(producer) -> float:
    """The producer's ``max_block_ms`` in seconds (its public ``config``)."""
    return float(producer.config.get("max_block_ms") or DEFAULT_LIMIT_S * 1000) / 1000


def _internals(producer):
    # The smallest reliance on kafka-python's internals: its public methods are these
    # same three lines with an unbounded wait (kafka/producer/kafka.py, 3.0.12; the
    # pyproject pins >=3.0.12,<3.1): the transaction manager returns a
    # TransactionalRequestResult whose wait(timeout_ms) is bounded, the sender is woken.
    tm, sender = getattr(producer, "_transaction_manager", None), getattr(producer, "_sender",
                                                                          None)
    if tm is None or sender is None:
        raise RuntimeError("this kafka-python has no _transaction_manager/_sender: the "
                           "bounded transactional calls need 3.0.x (producers/app_txn_wait.py)")
    return tm, sender


def _wait(result, call: str, limit_s: float) -> None:
    start = time.monotonic()
    done = result.wait(timeout_ms=limit_s * 1000)  # raises the request's own error
    failure = gave_up(bool(done), call, time.monotonic() - start)
    if failure is not None:
        raise failure


def send_offsets(producer, offsets, group_metadata, limit_s: float) -> None:
    """``producer.send_offsets_to_transaction(offsets, group_metadata)``, giving up after
    ``limit_s`` with :class:`CommitGaveUp`."""
    tm, sender = _internals(producer)
    result = tm.send_offsets_to_transaction(offsets, group_metadata)
    sender.wakeup()
    _wait(result, "send_offsets_to_transaction", limit_s)


def commit(producer, limit_s: float) -> None:
    """``producer.commit_transaction()``, giving up after ``limit_s`` with
    :class:`CommitGaveUp`."""
    tm, sender = _internals(producer)
    result = tm.begin_commit()
    sender.wakeup()
    _wait(result, "commit_transaction", limit_s)


def finish(producer, offsets, group_metadata, limit_s: float) -> None:
    """A transaction's last two steps, the offsets (with the group's metadata: KIP-447)
    and the commit, each given ``limit_s``."""
    send_offsets(producer, offsets, group_metadata, limit_s)
    commit(producer, limit_s)


__all__ = ["DEFAULT_LIMIT_S", "CommitGaveUp", "RecordsNotWritten", "commit", "finish",
           "gave_up", "limit_of", "not_written", "send_offsets"]
