"""Transactional mode: transactions of N records across partitions, some aborted on
purpose, every one recorded as ``begin``/``commit``/``abort`` operations.

kafka-python 3.0.12 traps handled here (shared notes §4, §9):

- it can commit a transaction whose sends failed with a retriable error, so every future
  is ``.get()``-ed before the commit and the transaction is aborted if any failed;
- after a KIP-360 epoch bump the broker has already aborted the transaction and the
  producer is READY; the next commit/abort raises "Invalid transition". That transaction
  counts as aborted and is redone with the same ids;
- commit/abort/send_offsets have no timeout: they run under :func:`bounded` with
  ``max.block.ms`` (Java's bound for them, KAFKA-7763); a call that overruns is ``info``
  and the producer is replaced;
- fenced or fatal: close the producer and build a new one (its ``init_transactions``
  fences the old epoch and aborts or completes the open transaction);
- back-to-back transactions: the first AddPartitionsToTxn of a transaction is answered
  CONCURRENT_TRANSACTIONS until the coordinator has written the previous transaction's
  markers. kafka-python means to retry it after 20 ms (``ADD_PARTITIONS_RETRY_BACKOFF_MS``,
  as Java does, KAFKA-5482) but its sender sleeps its own ``retry_backoff_ms`` (100 ms)
  before every transactional retry, on the I/O thread; with markers that take a few
  round trips (three brokers, acks=all) a 10-record transaction took ~0.5 s. See
  :func:`fast_txn_retries`;
- one transaction at a time: even so, a transaction costs a fixed few round trips
  (AddPartitionsToTxn once the coordinator has finished the previous one, the produce at
  acks=all, EndTxn; each a replicated write), whatever its size: 0.1-0.15 s on three
  local brokers, ~0.4 s during a chaos run (Spark and four generators on two cores). Ten
  records at a time then made ~20 records/s of the 200 asked, so a transaction takes
  every record already due when the generator is behind its rate (:func:`txn_size`):
  the rate holds, and the transactional flow and its checks are unchanged.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import deque
from enum import Enum

from kafka import KafkaProducer

from producers import outcomes
from producers.emitter import Emitter, Pacer
from producers.generator import CHUNK, Planner, Session
from producers.readback import commit_visible
from producers.resume import PlannedTxn
from verifier.rundata.history import now_ms


class TxnResult(Enum):
    COMMITTED = "committed"
    ABORTED = "aborted"  # aborted on purpose: not redone
    REDO = "redo"  # not committed, not meant to abort: run again with the same ids


def bounded(fn, timeout_s: float, what: str):
    """Run ``fn()`` with a deadline; :class:`~producers.outcomes.CallTimedOut` if it
    overruns (the call's thread is left behind; the producer is replaced)."""
    box: dict = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, name=f"bounded-{what}", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise outcomes.CallTimedOut(f"{what} did not return within {timeout_s:.0f}s")
    if "error" in box:
        raise box["error"]
    return box.get("result")


#: what kafka-python's transaction manager intends for a retried AddPartitionsToTxn
TXN_RETRY_BACKOFF_MS = 20


def init_failed_for_good(producer: KafkaProducer) -> bool:
    """Whether ``producer``'s transaction manager is in FATAL_ERROR (kafka-python 3.0.12:
    no call leaves it; only a new producer goes on)."""
    manager = producer._transaction_manager
    return manager is not None and manager.has_fatal_error()


def fast_txn_retries(producer: KafkaProducer) -> None:
    """Let the sender retry transactional requests after 20 ms instead of 100 ms.

    In kafka-python 3.0.12 the sender's own ``retry_backoff_ms`` is used only around
    transactional requests (the sleep before a retried one, the poll while one is in
    flight); record batches back off on the accumulator's copy, which stays as
    configured. Measured on three local brokers, 30 back-to-back transactions of 10
    records: 1.8 -> 5.1 transactions/s."""
    sender = getattr(producer, "_sender", None)
    config = getattr(sender, "config", None)
    if isinstance(config, dict) and "retry_backoff_ms" in config:
        config["retry_backoff_ms"] = min(config["retry_backoff_ms"], TXN_RETRY_BACKOFF_MS)


#: kafka-python's loggers that say, on its sender thread, that it bumps its own epoch and
#: which batch failed with which error. The generator writes completions from its main
#: thread; when that thread then blocks, nothing else reaches the history (measured after
#: a foreign initTransactions: the InvalidProducerEpoch answer was only in these logs, no
#: send completed again, and the column PASSed)
TXN_LOGS = ("kafka.producer.transaction_manager", "kafka.producer.producer_batch")
_LOGGED = ("Bumping producer epoch", "Failed to produce messages")


class BumpLog(logging.Handler):
    """Writes those warnings into the history as ``client-event`` lines (``error``: the
    message), read by verifier.judge.fencing. Runs on kafka-python's sender thread; one
    ``os.write`` a line."""

    def __init__(self, session: Session) -> None:
        super().__init__(logging.WARNING)
        self.session = session

    def emit(self, record: logging.LogRecord) -> None:
        writer = self.session.writer
        if writer is None:
            return
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  a malformed log call is not the run's concern
            return
        if message.startswith(_LOGGED):
            writer.write({"type": "client-event", "ses": self.session.ses,
                          "error": message[:400], "t": now_ms()})


class TxnRunner:
    """Runs transactions on one producer, replacing the producer when it must."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.settings = session.spec.settings
        self.block_s = self.settings["max_block_ms"] / 1000
        self.producer: KafkaProducer | None = None
        self.em: Emitter | None = None
        #: (partition, offset) of the last transaction whose commit ended info (it may
        #: have happened): a redo reads it back first (see producers.readback)
        self.unanswered: tuple[tuple[int, int], ...] = ()
        self._bump_log = BumpLog(session)
        for name in TXN_LOGS:
            log = logging.getLogger(name)
            log.addHandler(self._bump_log)
            if log.level == logging.NOTSET:  # not silenced with the rest of kafka's logs
                log.setLevel(min(logging.WARNING, log.getEffectiveLevel()))

    def connect(self) -> None:
        """A new producer with ``init_transactions()`` done (retried while it times out)."""
        if self.producer is not None:
            self.session.close_producer(self.producer, 0)
        self.producer = self.session.build_producer()
        fast_txn_retries(self.producer)
        while True:
            try:
                self.producer.init_transactions()  # bounded by max.block.ms itself
                break
            except outcomes.CallTimedOut:
                raise
            except Exception as exc:  # noqa: BLE001
                if outcomes.classify(exc, "init") is outcomes.Outcome.FAIL:
                    raise
                print(f"init_transactions: {outcomes.describe(exc)}; retrying", flush=True)
                if self.session.stop.wait(self.settings["retry_backoff_ms"] / 1000):
                    raise
                if init_failed_for_good(self.producer):
                    # kafka-python turns an InitProducerId that timed out into FATAL_ERROR,
                    # from which that producer never initializes ("Invalid transition
                    # attempted from state FATAL_ERROR to state INITIALIZING" forever, seen
                    # on 4.4.0 brokers stalled by a broker kill): retry on a new producer
                    self.session.close_producer(self.producer, 0)
                    self.producer = self.session.build_producer()
                    fast_txn_retries(self.producer)
        pe = self.producer._transaction_manager.producer_id_and_epoch  # for the process log
        print(f"transactional.id {self.settings['transactional_id']}: producer id "
              f"{pe.producer_id}, epoch {pe.epoch}", flush=True)
        if self.em is not None:
            self.em.replace_producer(self.producer)
            assert self.session.writer is not None
            self.session.writer.write_raw(self.em.producer_identity_line())

    def _op(self, f: str, txn: int, **extra) -> None:
        assert self.session.writer is not None
        self.session.writer.write({"type": "invoke", "f": f, "ses": self.session.ses,
                                   "txn": txn, **extra, "t": now_ms()})

    def _done(self, f: str, txn: int, exc: BaseException | None, op: str | None = None) -> str:
        outcome = outcomes.classify(exc, op or f)
        line = {"type": outcome.value, "f": f, "ses": self.session.ses, "txn": txn}
        if exc is not None:
            line["error"] = outcomes.describe(exc)
        assert self.session.writer is not None
        self.session.writer.write({**line, "t": now_ms()})
        return outcome.value

    def run(self, txn: PlannedTxn, before_send=None, offsets=None) -> tuple[TxnResult, bool]:
        """One transaction; returns its result and whether the producer must be replaced.
        ``offsets`` (copier): ``(offsets, group_metadata)`` sent to the transaction."""
        assert self.producer is not None and self.em is not None
        self.unanswered = ()
        self._op("begin", txn.txn, abort=txn.abort, recs=[list(r) for r in txn.recs])
        try:
            self.producer.begin_transaction()
        except Exception as exc:  # noqa: BLE001
            self._done("begin", txn.txn, exc)
            return TxnResult.REDO, True
        self._done("begin", txn.txn, None)
        futures, stopped = [], False
        step = 1 if before_send is not None else CHUNK  # paced: one record at a time
        for i in range(0, len(txn.recs), step):
            if self.session.stop.is_set():
                stopped = True  # clean stop: abort this one, a restart redoes it
                break
            if before_send is not None:
                before_send(self.em)
            futures += self.em.send_many(txn.recs[i:i + step], txn.txn, txn.abort)
        failures = self.em.wait_all(futures)
        # the copier sends offsets in a transaction meant to abort too (they must not count)
        if offsets is not None and not failures and not stopped:
            try:
                bounded(lambda: self.producer.send_offsets_to_transaction(*offsets),
                        self.block_s, "send_offsets_to_transaction")
            except Exception as exc:  # noqa: BLE001
                print(f"send_offsets_to_transaction: {outcomes.describe(exc)}", flush=True)
                failures.append(exc)
        if failures or stopped or txn.abort:
            replace = self._abort(txn.txn)
            intended = txn.abort and not failures and not stopped
            return (TxnResult.ABORTED if intended else TxnResult.REDO), replace
        return self._commit(txn, futures)

    def _abort(self, txn: int) -> bool:
        self._op("abort", txn)
        try:
            bounded(self.producer.abort_transaction, self.block_s, "abort_transaction")
        except Exception as exc:  # noqa: BLE001
            outcome = self._done("abort", txn, exc)
            return outcome != "ok" or outcomes.needs_new_producer(exc)
        self._done("abort", txn, None)
        return False

    def _commit(self, txn: PlannedTxn, futures: list) -> tuple[TxnResult, bool]:
        self._op("commit", txn.txn)
        try:
            bounded(self.producer.commit_transaction, self.block_s, "commit_transaction")
        except Exception as exc:  # noqa: BLE001
            if self._done("commit", txn.txn, exc) == "info":  # it may have happened
                first: dict[int, int] = {}  # one appended offset per partition
                for (p, _), fut in zip(txn.recs, futures, strict=False):
                    if fut is not None and fut.succeeded() and fut.value.offset >= 0:
                        first.setdefault(p, fut.value.offset)
                self.unanswered = tuple(sorted(first.items()))
            # "Invalid transition": the epoch bump aborted it, the producer is READY
            return TxnResult.REDO, not outcomes.is_invalid_transition(exc)
        self._done("commit", txn.txn, None)
        return TxnResult.COMMITTED, False

    def close(self) -> None:
        for name in TXN_LOGS:
            logging.getLogger(name).removeHandler(self._bump_log)
        if self.producer is not None:
            self.session.close_producer(self.producer, 10)
        if self.em is not None:  # what closing completed, and what waited behind it
            self.em.write_completions(every=True)


#: a transaction holds at most this many seconds of the rate's records
MAX_TXN_SECONDS = 2.0


def txn_size(nominal: int, pacer: Pacer) -> int:
    """``nominal`` (the workload's ``txn_size``) records, or every record already due
    when the generator has fallen behind its rate (the previous commit took longer than
    the records it held were worth), up to :data:`MAX_TXN_SECONDS` of them. Unbounded
    (no rate): always ``nominal``."""
    if not pacer.interval:
        return nominal
    most = max(nominal, int(MAX_TXN_SECONDS / pacer.interval))
    return min(most, max(nominal, pacer.due()))


def _plan(session: Session, planner: Planner, rng: random.Random, next_txn: int,
          pacer: Pacer) -> PlannedTxn:
    size = txn_size(session.spec.txn_size, pacer)
    left = session.remaining()
    if left is not None:
        size = min(size, left)
    recs = tuple(planner.next() for _ in range(size))
    session.new_records += size
    return PlannedTxn(next_txn, rng.random() < session.spec.abort_fraction, recs)


def run_transactional(session: Session) -> None:
    """Redo what earlier sessions left uncommitted (same ids), then new transactions."""
    runner = TxnRunner(session)
    try:
        runner.connect()
        partitions = session.partitions(runner.producer)
        session.open_history(partitions)
        runner.em = session.emitter(runner.producer)
        # one schedule for the whole session, as the other modes pace: the time a commit
        # takes is made up by the next records, instead of restarting the clock each
        # transaction (which capped the rate at txn_size / (txn_size / rate + commit))
        pacer = Pacer(session.spec.rate, session.stop)

        def run_one(txn: PlannedTxn) -> tuple[bool, bool]:
            result, replace = runner.run(txn, before_send=_pacing(pacer))
            return result is TxnResult.REDO, replace

        transaction_loop(session, runner, Planner(partitions, session.resume.next_seq),
                         pacer, run_one)
    finally:
        runner.close()


def transaction_loop(session: Session, runner, planner: Planner, pacer: Pacer,
                     run_one) -> None:
    """The transactional flow, whatever the client: redo what earlier sessions left
    uncommitted (an unanswered commit read back first), then new transactions until the
    budget or a stop. ``run_one(txn) -> (redo, replace)`` runs one transaction on the
    client's ``runner`` (which has ``unanswered`` and ``connect``); new transactions are
    sized from the schedule (:func:`txn_size`), so a slow commit is caught up."""
    # seeded per session, so a restart does not replay the same abort decisions
    rng = random.Random(f"{session.spec.seed}:{session.spec.pid}:{session.ses}")
    redo = deque(session.resume.uncommitted)
    next_txn = session.resume.next_txn
    while redo or session.running():
        if session.stop.is_set():
            break
        if redo:
            txn = redo.popleft()
            if txn.probe and _committed_after_all(session, txn):
                continue
        else:
            txn = _plan(session, planner, rng, next_txn, pacer)
            next_txn += 1
        redone, replace = run_one(txn)
        if redone:
            redo.appendleft(PlannedTxn(txn.txn, False, txn.recs, runner.unanswered))
            session.stop.wait(session.spec.settings["retry_backoff_ms"] / 1000)
        if replace and not session.stop.is_set():
            runner.connect()


def _committed_after_all(session: Session, txn: PlannedTxn) -> bool:
    """Before redoing a transaction whose commit was never answered: read it back (the
    producer's ``init_transactions`` has made the coordinator finish it). Redo only when
    it is known aborted; when it cannot be told, do not redo either (a skipped transaction
    is never counted as written unless a read_committed reader saw it; a redone committed
    one is a duplicate the tool itself would have made)."""
    spec = session.spec
    seen = commit_visible(spec.bootstrap_servers, spec.settings, spec.topic, txn.probe)
    if seen is False:
        print(f"transaction {txn.txn}: its unanswered commit did not happen (read back "
              f"at read_committed); redoing it", flush=True)
        return False
    print(f"transaction {txn.txn}: its unanswered commit "
          f"{'happened' if seen else 'cannot be read back'}; not redoing it", flush=True)
    return True


def _pacing(pacer: Pacer):
    """A per-send hook holding each record to the session's schedule (None when
    unbounded)."""
    if not pacer.interval:
        return None

    def pace(em: Emitter) -> None:
        pacer.pace(em.write_completions)
    return pace
