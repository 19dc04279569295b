"""The librdkafka generator: ``python -m producers.rdkafka --plan RUN/config.json --pid P``.

The same contract as the kafka-python generator (same flags, plan, record values, history,
presets, restart policy and transactional flow; :mod:`producers.generator`) on
confluent-kafka, whose wheel bundles librdkafka. What differs is the client:

- settings: the presets (kafka-python names, :mod:`producers.config`) mapped onto
  librdkafka properties (:data:`PROPERTIES`); ``buffer.memory`` becomes
  ``queue.buffering.max.kbytes``; ``max.block.ms`` bounds the transactional calls, which
  take a timeout in librdkafka;
- outcomes: librdkafka error codes, ``retriable()``, ``txn_requires_abort()``, ``fatal()``
  mapped to ok / fail / info in :mod:`producers.rdkafka_outcomes`;
- delivery reports arrive from ``poll()``/``flush()`` on the generator's own thread;
- librdkafka does not expose its producer id and epoch, so its histories have no
  ``producer-id`` lines.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from typing import Any

from producers.emitter import Pacer
from producers.generator import (
    CHUNK,
    ClusterUnreachable,
    GeneratorSpec,
    Planner,
    Session,
    send_plain,
)
from producers.rdkafka_outcomes import (
    CLIENT,
    FAIL,
    INFO,
    OK,
    classify,
    describe,
    librdkafka_config,
    redacted_config,
)
from producers.resume import PlannedTxn
from verifier.rundata.errors import UsageError
from verifier.rundata.history import (
    NO_ACK,
    invoke_send_lines,
    no_ack_send_line,
    now_ms,
    ok_send_line,
)
from verifier.rundata.records import encode_values

# --- sending --------------------------------------------------------------------------------


class _Pending:
    __slots__ = ("p", "seq", "txn", "done", "err", "offset", "queue")

    def __init__(self, p: int, seq: int, txn: int | None, queue: deque) -> None:
        self.p, self.seq, self.txn, self.queue = p, seq, txn, queue
        self.done, self.err, self.offset = False, None, None

    def __call__(self, err, msg) -> None:  # delivery report, on the generator's thread
        self.done, self.err = True, err
        self.offset = None if err is not None else msg.offset()
        self.queue.append((self, now_ms()))


class RdEmitter:
    """``invoke`` lines written (one write per chunk) before ``produce()``; completions
    from the delivery reports that ``poll()``/``flush()`` serve."""

    def __init__(self, producer, session: Session, acks) -> None:
        s = session.spec.settings
        self.producer, self.session, self.writer = producer, session, session.writer
        self.topic, self.run = session.spec.topic, session.spec.run_id
        self.pid = session.spec.pid.encode()  # the key's first part (records.py: the key)
        self.ses, self.record_size, self.acks0 = session.ses, s["record_size"], acks == 0
        self.block_s = s["max_block_ms"] / 1000
        self.timeout_s = (s["delivery_timeout_ms"] + s["request_timeout_ms"]) / 1000
        self._done: deque = deque()  # transactional sends' reports: (_Pending, t)
        self._reports: list = []  # plain sends' reports since the last write: (err, message)
        keep = self._reports.append

        def report(err, msg) -> None:  # a plain send's delivery report (from poll/flush)
            keep((err, msg))

        self._report = report  # one function for every plain send: no object per record
        # the ok line of a plain send, filled with the key's own digits (records.py: the
        # key is <pid>:<p>:<seq>), the offset and the time
        self._ok_head = b'{"type":"ok","f":"send","ses":%d,"p":' % self.ses

    def send_many(self, idents, txn: int | None = None, abort: bool = False) -> list:
        """Announce and produce; return a :class:`_Pending` per record of a transaction
        (``None`` where produce() raised). Plain sends (``txn`` None) return nothing to
        wait on: their reports go to one callback, ``self._report``, which keeps the
        message (its key names the record), ~1 us a record less than an object each."""
        ts = now_ms()
        values = encode_values(self.run, self.session.spec.pid, self.ses, idents, txn, abort,
                               ts, self.record_size)
        lines = [self._completion_lines(), *invoke_send_lines(self.ses, idents, txn, ts)]
        self.writer.write_raw(b"".join(lines))
        pendings: list = []
        produce, topic, pid, done = self.producer.produce, self.topic, self.pid, self._done
        report = self._report
        for (p, seq), value in zip(idents, values, strict=True):
            callback = report if txn is None else _Pending(p, seq, txn, done)
            try:
                try:  # the usual case first: room in librdkafka's queue; positional
                    # (topic, value, key, partition, callback): no keywords to parse
                    produce(topic, value, b"%s:%d:%d" % (pid, p, seq), p, callback)
                except BufferError:
                    self._produce_blocking(p, seq, value, callback)
            except Exception as exc:  # noqa: BLE001 - every exception is an outcome here
                self.writer.write_raw(self._line(_Pending(p, seq, txn, done), exc, now_ms(),
                                                 "enqueue"))
                pendings.append(None)
                continue
            pendings.append(callback)
        self.producer.poll(0)
        return pendings if txn is not None else []

    def _produce_blocking(self, p: int, seq: int, value: bytes, pending) -> None:
        """A full queue blocks, as Java's send() does, up to max.block.ms."""
        deadline = time.monotonic() + self.block_s
        while True:
            self.producer.poll(0.05)
            try:
                self.producer.produce(self.topic, value, b"%s:%d:%d" % (self.pid, p, seq),
                                      partition=p, on_delivery=pending)
                return
            except BufferError:
                if time.monotonic() > deadline:
                    raise

    def wait_all(self, pendings) -> list:
        """Every delivery report of ``pendings`` (``None``: produce() raised); failures."""
        deadline = time.monotonic() + self.timeout_s
        while any(p is not None and not p.done for p in pendings) and \
                time.monotonic() < deadline:
            self.producer.poll(0.05)
        failures = [RuntimeError("produce() raised") if p is None else
                    (p.err if p.done else TimeoutError("no delivery report")) for p in pendings]
        self.write_completions()
        return [f for f in failures if f is not None]

    def flush(self) -> None:
        """Deliver what is queued, writing completions every 0.1 s on the way: a plain
        send's line takes the time it is written (:meth:`_plain_lines`)."""
        deadline = time.monotonic() + self.timeout_s
        try:
            while self.producer.flush(min(0.1, max(0.0, deadline - time.monotonic()))) \
                    and time.monotonic() < deadline:
                self.write_completions()
        finally:
            self.write_completions()

    def write_completions(self) -> None:
        self.producer.poll(0)
        lines = self._completion_lines()
        if lines:
            self.writer.write_raw(lines)

    def _completion_lines(self) -> bytes:
        out = []
        if self._reports:  # plain sends: the record named by the message's key
            out.append(self._plain_lines(now_ms()))
        while self._done:  # a transaction's sends
            pending, t = self._done.popleft()
            out.append(self._completion(pending.p, pending.seq, pending.txn, pending.err,
                                        pending.offset, t, "send"))
        return b"".join(out)

    def _plain_lines(self, t: int) -> bytes:
        """The completions of the plain sends reported since the last call, at ``t`` (the
        reports of one ``poll()``/``flush()`` share a time). An acknowledged send, the
        usual case, is one format of the key's own digits: no int() and no dict."""
        reports = self._reports.copy()  # reports arrive only inside poll()/flush()
        self._reports.clear()  # the same list: the callback appends to it
        skip = len(self.pid) + 1  # the key is <pid>:<p>:<seq>; the pid may hold colons
        ok = self._ok_head + b'%s,"seq":%s,"txn":null,"offset":%d,"t":' + b"%d}\n" % t
        out = []
        for err, msg in reports:
            p, seq = msg.key()[skip:].split(b":")
            if err is None and not self.acks0:
                offset = msg.offset()
                if offset >= 0:
                    out.append(ok % (p, seq, offset))
                    continue
            out.append(self._completion(int(p), int(seq), None, err,
                                        None if err is not None else msg.offset(), t, "send"))
        return b"".join(out)

    def _line(self, pending: _Pending, err, t: int, op: str) -> bytes:
        return self._completion(pending.p, pending.seq, pending.txn, err, pending.offset, t, op)

    def _completion(self, p: int, seq: int, txn: int | None, err, offset, t: int,
                    op: str) -> bytes:
        import orjson

        if err is None and not self.acks0 and offset is not None and offset >= 0:
            return ok_send_line(self.ses, p, seq, txn, offset, t)
        if err is None and self.acks0:  # every send of at-most-once
            return no_ack_send_line(self.ses, p, seq, txn, t)
        line: dict[str, Any] = {"type": OK, "f": "send", "ses": self.ses, "p": p, "seq": seq,
                                "txn": txn}
        if err is None:  # acknowledged without an offset
            line["type"] = INFO
            line["error"] = NO_ACK
        else:
            line["type"] = classify(err, op)
            line["error"] = describe(err)
            if line["type"] == OK:
                line["offset"] = None
        line["t"] = t
        return orjson.dumps(line) + b"\n"


# --- the session --------------------------------------------------------------------------


def _producer(session: Session, conf: dict):
    from confluent_kafka import KafkaException, Producer

    try:
        return Producer(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        raise UsageError(f"librdkafka rejected the producer settings: {describe(exc)}") from exc


def _partitions(session: Session, producer) -> tuple[int, ...]:
    from confluent_kafka import KafkaException

    spec = session.spec
    try:
        md = producer.list_topics(spec.topic, timeout=spec.connect_timeout)
    except KafkaException as exc:
        raise ClusterUnreachable(f"cannot reach Kafka at {spec.bootstrap_servers}: "
                                 f"{describe(exc)}") from None
    topic = md.topics.get(spec.topic)
    if topic is None or topic.error is not None or not topic.partitions:
        raise ClusterUnreachable(f"topic {spec.topic} has no partitions")
    known = sorted(topic.partitions)
    if spec.partitions is None:
        return tuple(known)
    missing = sorted(set(spec.partitions) - set(known))
    if missing:
        raise UsageError(f"--partitions {missing} do not exist in topic {spec.topic}")
    return spec.partitions


def run_plain(session: Session, conf: dict) -> None:
    producer = _producer(session, conf)
    parts = _partitions(session, producer)
    session.open_history(parts)
    em = RdEmitter(producer, session, session.spec.settings["acks"])
    send_plain(session, em, parts)
    em.flush()


class RdTxnRunner:
    """Transactions on one librdkafka producer, replaced when it must be."""

    def __init__(self, session: Session, conf: dict) -> None:
        self.session, self.conf = session, conf
        self.block_s = session.spec.settings["max_block_ms"] / 1000
        self.producer = None
        self.em: RdEmitter | None = None
        self.unanswered: tuple[tuple[int, int], ...] = ()

    def connect(self) -> None:
        backoff = self.session.spec.settings["retry_backoff_ms"] / 1000
        while True:
            self.producer = _producer(self.session, self.conf)
            try:
                self.producer.init_transactions(self.block_s)
                break
            except Exception as exc:  # noqa: BLE001
                if classify(exc, "init") == FAIL:
                    raise ClusterUnreachable(f"init_transactions: {describe(exc)}") from None
                print(f"init_transactions: {describe(exc)}; retrying", flush=True)
                if self.session.stop.wait(backoff):
                    raise
        if self.em is not None:
            self.em.producer = self.producer

    def _write(self, kind: str, f: str, txn: int, exc=None, **extra) -> str:
        line = {"type": kind, "f": f, "ses": self.session.ses, "txn": txn, **extra}
        if exc is not None:
            line["error"] = describe(exc)
        line["t"] = now_ms()
        assert self.session.writer is not None
        self.session.writer.write(line)
        return kind

    def _done(self, f: str, txn: int, exc) -> str:
        return self._write(classify(exc, f), f, txn, exc)

    def run(self, txn: PlannedTxn, pacer: Pacer) -> tuple[str, bool]:
        """One transaction: ("committed" | "aborted" | "redo", replace the producer?)."""
        assert self.em is not None
        self.unanswered = ()
        self._write("invoke", "begin", txn.txn, abort=txn.abort,
                    recs=[list(r) for r in txn.recs])
        try:
            self.producer.begin_transaction()
        except Exception as exc:  # noqa: BLE001
            self._done("begin", txn.txn, exc)
            return "redo", True
        self._done("begin", txn.txn, None)
        pendings, stopped = [], False
        step = 1 if pacer.interval else CHUNK
        for i in range(0, len(txn.recs), step):
            if self.session.stop.is_set():
                stopped = True
                break
            pacer.pace(self.em.write_completions)
            pendings += self.em.send_many(txn.recs[i:i + step], txn.txn, txn.abort)
        failures = self.em.wait_all(pendings)  # every send checked before the commit
        if failures or stopped or txn.abort:
            self._write("invoke", "abort", txn.txn)
            try:
                self.producer.abort_transaction(self.block_s)
                self._done("abort", txn.txn, None)
                replace = False
            except Exception as exc:  # noqa: BLE001
                self._done("abort", txn.txn, exc)
                replace = True
            self.em.write_completions()
            return ("aborted" if txn.abort and not failures and not stopped else "redo"), replace
        self._write("invoke", "commit", txn.txn)
        try:
            self.producer.commit_transaction(self.block_s)
        except Exception as exc:  # noqa: BLE001
            if self._done("commit", txn.txn, exc) == INFO:
                first: dict[int, int] = {}
                for p in pendings:
                    if p is not None and p.done and p.err is None and p.offset is not None \
                            and p.offset >= 0:
                        first.setdefault(p.p, p.offset)
                self.unanswered = tuple(sorted(first.items()))
            return "redo", True
        self._done("commit", txn.txn, None)
        self.em.write_completions()
        return "committed", False


def run_transactional(session: Session, conf: dict) -> None:
    from producers.transactional import transaction_loop

    runner = RdTxnRunner(session, conf)
    runner.connect()
    parts = _partitions(session, runner.producer)
    session.open_history(parts)
    runner.em = RdEmitter(runner.producer, session, session.spec.settings["acks"])
    pacer = Pacer(session.spec.rate, session.stop)

    def run_one(txn: PlannedTxn) -> tuple[bool, bool]:
        result, replace = runner.run(txn, pacer)
        return result == "redo", replace

    transaction_loop(session, runner, Planner(parts, session.resume.next_seq), pacer, run_one)
    runner.em.write_completions()


def run(spec: GeneratorSpec) -> int:
    from producers.generator import install_stop_handlers

    if spec.input_topic:
        raise UsageError("the copier (--input-topic) runs on kafka-python only")
    conf = librdkafka_config(spec.settings, spec.bootstrap_servers,
                             spec.settings.get("client_id") or f"verifier.generator.{spec.pid}")
    session = Session(spec)
    session.client = CLIENT
    session.session_config = redacted_config(conf)
    install_stop_handlers(session.stop)
    print(f"{spec.pid}: session {session.ses}, mode {spec.mode}, topic {spec.topic}, "
          f"history {spec.history_path}, client librdkafka", flush=True)
    try:
        (run_transactional if spec.mode == "transactional" else run_plain)(session, conf)
    finally:
        if session.writer is not None:
            session.writer.close()
    print(f"{spec.pid}: session {session.ses} done, {session.new_records} new records",
          flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m producers.rdkafka``: the flags of ``python -m producers``."""
    from producers.cli import EXIT_USAGE, _Parser, add_arguments, spec_from_args
    from verifier.rundata.errors import VerifierError

    parser = _Parser(prog="python -m producers.rdkafka",
                     description="load generator on librdkafka (confluent-kafka), one mode")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        spec = spec_from_args(args)
        print("effective producer config: "
              + str(redacted_config(librdkafka_config(spec.settings, spec.bootstrap_servers,
                                                      "-"))), flush=True)
        return run(spec)
    except UsageError as exc:
        print(f"producers.rdkafka: usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except VerifierError as exc:
        print(f"producers.rdkafka: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
