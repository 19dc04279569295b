"""The librdkafka generator: ``python -m producers.rdkafka --plan RUN/config.json --pid P``.

The same contract as the kafka-python generator (same flags, plan, record values, history,
presets, restart policy and transactional flow; :mod:`producers.generator`) on
confluent-kafka, whose wheel bundles librdkafka. What differs is the client:

- settings: the presets (kafka-python names, :mod:`producers.config`) mapped onto
  librdkafka properties (:data:`PROPERTIES`); ``buffer.memory`` becomes
  ``queue.buffering.max.kbytes``; ``max.block.ms`` bounds the transactional calls, which
  take a timeout in librdkafka;
- outcomes: librdkafka error codes, ``retriable()``, ``txn_requires_abort()``, ``fatal()``
  mapped to ok / fail / info in :data:`TABLE` (docs/java-generator.md, "librdkafka");
- delivery reports arrive from ``poll()``/``flush()`` on the generator's own thread;
- librdkafka does not expose its producer id and epoch, so its histories have no
  ``producer-id`` lines.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from producers.emitter import Pacer
from producers.generator import CHUNK, ClusterUnreachable, GeneratorSpec, Planner, Session
from producers.resume import PlannedTxn
from verifier.rundata.errors import UsageError
from verifier.rundata.history import now_ms
from verifier.rundata.records import RecordIdentity, encode_value

CLIENT = "librdkafka"

#: kafka-python setting -> librdkafka property (None: generator-side, not passed on)
PROPERTIES: Mapping[str, str | None] = {
    "enable_idempotence": "enable.idempotence", "acks": "acks", "retries": "retries",
    "max_in_flight_requests_per_connection": "max.in.flight.requests.per.connection",
    "batch_size": "batch.size", "linger_ms": "linger.ms",
    "buffer_memory": "queue.buffering.max.kbytes", "compression_type": "compression.type",
    "request_timeout_ms": "request.timeout.ms", "delivery_timeout_ms": "delivery.timeout.ms",
    "retry_backoff_ms": "retry.backoff.ms", "transactional_id": "transactional.id",
    "transaction_timeout_ms": "transaction.timeout.ms", "client_id": "client.id",
    "max_request_size": "message.max.bytes",
    "security_protocol": "security.protocol", "sasl_mechanism": "sasl.mechanism",
    "sasl_plain_username": "sasl.username", "sasl_plain_password": "sasl.password",
    "ssl_cafile": "ssl.ca.location", "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location", "ssl_password": "ssl.key.password",
    "ssl_crlfile": "ssl.crl.location", "ssl_ciphers": "ssl.cipher.suites",
    "max_block_ms": None, "record_size": None, "ssl_check_hostname": None,
}  # fmt: skip

SECRET_PROPERTIES = frozenset({"sasl.password", "ssl.key.password"})


def librdkafka_config(settings: Mapping[str, Any], bootstrap_servers: str,
                      client_id: str) -> dict[str, Any]:
    """The librdkafka properties for the generator's settings; a setting librdkafka has
    no equivalent for is a :class:`UsageError` naming it."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "client.id": client_id}
    unknown = []
    for key, value in settings.items():
        if key not in PROPERTIES:
            unknown.append(key)
            continue
        prop = PROPERTIES[key]
        if prop is None or value is None and key != "compression_type":
            continue
        if key == "acks":
            value = "all" if value == -1 else value
        elif key == "compression_type":
            value = value or "none"
        elif key == "buffer_memory":
            value = max(1, int(value) // 1024)
        conf[prop] = value
    if unknown:
        raise UsageError(f"librdkafka has no equivalent for {', '.join(sorted(unknown))}")
    txn_timeout = conf.get("transaction.timeout.ms")
    if txn_timeout is not None and conf.get("delivery.timeout.ms", 300000) > txn_timeout:
        # librdkafka refuses message.timeout.ms > transaction.timeout.ms (a record must
        # time out before its transaction does); Java and kafka-python allow it
        conf["delivery.timeout.ms"] = txn_timeout
    return conf


def redacted_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ("***" if k in SECRET_PROPERTIES else v) for k, v in sorted(conf.items())}


# --- the exception table ------------------------------------------------------------------

OK, FAIL, INFO = "ok", "fail", "info"

#: (operations, error code name or "*", predicate or None, outcome, why); first match wins.
#: Codes are librdkafka's (``KafkaError.<NAME>``; a leading ``_`` is a local error).
TABLE: tuple[tuple[tuple[str, ...], str, str | None, str, str], ...] = (
    (("enqueue",), "*", None, FAIL, "produce() raised (queue full past max.block.ms, unknown "
     "partition, producer in an error state): the record never entered the queue"),
    (("begin",), "*", None, FAIL, "begin_transaction() is local: no request was sent"),
    (("send",), "DUPLICATE_SEQUENCE_NUMBER", None, OK, "the broker has it already"),
    (("send",), "_PURGE_QUEUE", None, FAIL, "purged from the queue: never sent"),
    (("send",), "MSG_SIZE_TOO_LARGE", None, FAIL, "rejected"),
    (("send",), "_MSG_SIZE_TOO_LARGE", None, FAIL, "refused locally: never sent"),
    (("send",), "INVALID_MSG_SIZE", None, FAIL, "rejected"),
    (("send",), "RECORD_LIST_TOO_LARGE", None, FAIL, "rejected"),
    (("send",), "TOPIC_AUTHORIZATION_FAILED", None, FAIL, "rejected"),
    (("send",), "CLUSTER_AUTHORIZATION_FAILED", None, FAIL, "rejected"),
    (("send",), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", None, FAIL, "rejected"),
    (("send",), "INVALID_REQUIRED_ACKS", None, FAIL, "rejected"),
    (("send",), "POLICY_VIOLATION", None, FAIL, "rejected"),
    (("send",), "UNSUPPORTED_VERSION", None, FAIL, "rejected"),
    (("send",), "UNSUPPORTED_FOR_MESSAGE_FORMAT", None, FAIL, "rejected"),
    (("send",), "UNSUPPORTED_COMPRESSION_TYPE", None, FAIL, "rejected"),
    (("send",), "INVALID_RECORD", None, FAIL, "rejected"),
    (("send",), "PRODUCER_FENCED", None, FAIL, "fenced: the old epoch is rejected"),
    (("send",), "INVALID_PRODUCER_EPOCH", None, FAIL, "old epoch: rejected"),
    (("send",), "_FENCED", None, FAIL, "the producer was fenced: not sent"),
    (("send",), "OUT_OF_ORDER_SEQUENCE_NUMBER", None, FAIL, "the leader rejected the sequence"),
    (("send",), "INVALID_TXN_STATE", None, FAIL, "rejected"),
    (("send",), "*", None, INFO, "anything else, every retriable error and _MSG_TIMED_OUT, "
     "_PURGE_INFLIGHT, _TRANSPORT included: an earlier attempt may have been appended"),
    (("commit",), "*", "txn_requires_abort", FAIL, "the transaction must be aborted: the "
     "commit did not happen"),
    (("commit",), "_STATE", None, FAIL, "not in a state to commit: no EndTxn was sent"),
    (("commit",), "*", None, INFO, "timeout, retriable, fenced or fatal: a commit already "
     "prepared completes; read back before a redo"),
    (("abort",), "*", None, INFO, "timeout or fatal: the new producer's init_transactions "
     "aborts what is still open"),
    (("init",), "*", "fatal", FAIL, "fatal: give up"),
    (("init",), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", None, FAIL, "not allowed: give up"),
    (("init",), "_INVALID_ARG", None, FAIL, "bad settings: give up"),
    (("init",), "_NOT_CONFIGURED", None, FAIL, "no transactional.id: give up"),
    (("init",), "*", None, INFO, "retried (timeouts, coordinator moving)"),
)  # fmt: skip


def _error(exc: BaseException | Any):
    """The librdkafka ``KafkaError`` in an exception (or the error itself), or None."""
    from confluent_kafka import KafkaError, KafkaException

    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def rule(exc: BaseException | Any, op: str):
    """The row of :data:`TABLE` deciding operation ``op`` that ended with ``exc``."""
    err = _error(exc)
    name = err.name() if err is not None else type(exc).__name__
    for ops, code, pred, outcome, why in TABLE:
        if op not in ops or code not in ("*", name):
            continue
        if pred is not None and not (err is not None and getattr(err, pred)()):
            continue
        return ops, code, pred, outcome, why
    raise ValueError(f"no rule for operation {op!r}")


def classify(exc: BaseException | Any | None, op: str) -> str:
    return OK if exc is None else rule(exc, op)[3]


def describe(exc: BaseException | Any) -> str:
    err = _error(exc)
    if err is not None:
        return f"KafkaError {err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"


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
        self.topic, self.run, self.pid = session.spec.topic, session.spec.run_id, session.spec.pid
        self.ses, self.record_size, self.acks0 = session.ses, s["record_size"], acks == 0
        self.block_s = s["max_block_ms"] / 1000
        self.timeout_s = (s["delivery_timeout_ms"] + s["request_timeout_ms"]) / 1000
        self._done: deque = deque()

    def send_many(self, idents, txn: int | None = None, abort: bool = False) -> list:
        ts = now_ms()
        import orjson

        lines = [self._completion_lines()]
        values = []
        for p, seq in idents:
            values.append(encode_value(RecordIdentity(self.run, self.pid, self.ses, p, seq, txn,
                                                      abort, ts), self.record_size))
            lines.append(orjson.dumps({"type": "invoke", "f": "send", "ses": self.ses, "p": p,
                                       "seq": seq, "txn": txn, "t": ts}) + b"\n")
        self.writer.write_raw(b"".join(lines))
        pendings = []
        for (p, seq), value in zip(idents, values, strict=True):
            pending = _Pending(p, seq, txn, self._done)
            try:
                self._produce(p, seq, value, pending)
            except Exception as exc:  # noqa: BLE001 - every exception is an outcome here
                self.writer.write_raw(self._line(pending, exc, now_ms(), "enqueue"))
                pendings.append(None)
                continue
            pendings.append(pending)
        self.producer.poll(0)
        return pendings

    def _produce(self, p: int, seq: int, value: bytes, pending: _Pending) -> None:
        deadline = time.monotonic() + self.block_s
        while True:  # a full queue blocks, as Java's send() does, up to max.block.ms
            try:
                self.producer.produce(self.topic, value, f"{self.pid}:{p}:{seq}".encode(),
                                      partition=p, on_delivery=pending)
                return
            except BufferError:
                if time.monotonic() > deadline:
                    raise
                self.producer.poll(0.05)

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
        try:
            self.producer.flush(self.timeout_s)
        finally:
            self.write_completions()

    def write_completions(self) -> None:
        self.producer.poll(0)
        lines = self._completion_lines()
        if lines:
            self.writer.write_raw(lines)

    def _completion_lines(self) -> bytes:
        out = []
        while self._done:
            pending, t = self._done.popleft()
            out.append(self._line(pending, pending.err, t, "send"))
        return b"".join(out)

    def _line(self, pending: _Pending, err, t: int, op: str) -> bytes:
        import orjson

        line: dict[str, Any] = {"type": OK, "f": "send", "ses": self.ses, "p": pending.p,
                                "seq": pending.seq, "txn": pending.txn}
        if err is None and (self.acks0 or pending.offset is None or pending.offset < 0):
            line["type"] = INFO
            line["error"] = "NoAcknowledgement: acks=0, the broker does not answer"
        elif err is None:
            line["offset"] = pending.offset
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
    pacer = Pacer(session.spec.rate, session.stop)
    if session.spec.mode != "at-most-once":
        resend = session.resume.unacked
        i = 0
        while i < len(resend) and not session.stop.is_set():
            chunk = resend[i:i + pacer.chunk(CHUNK)]
            pacer.pace(em.write_completions, len(chunk))
            em.send_many(chunk)
            i += len(chunk)
    planner = Planner(parts, session.resume.next_seq)
    while session.running():
        left = session.remaining()
        k = pacer.chunk(CHUNK if left is None else min(CHUNK, left))
        pacer.pace(em.write_completions, k)
        em.send_many([planner.next() for _ in range(k)])
        session.new_records += k
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
    import random

    from producers.transactional import _committed_after_all

    runner = RdTxnRunner(session, conf)
    runner.connect()
    parts = _partitions(session, runner.producer)
    session.open_history(parts)
    runner.em = RdEmitter(runner.producer, session, session.spec.settings["acks"])
    planner = Planner(parts, session.resume.next_seq)
    rng = random.Random(f"{session.spec.seed}:{session.spec.pid}:{session.ses}")
    redo = deque(session.resume.uncommitted)
    next_txn = session.resume.next_txn
    pacer = Pacer(session.spec.rate, session.stop)
    while redo or session.running():
        if session.stop.is_set():
            break
        if redo:
            txn = redo.popleft()
            if txn.probe and _committed_after_all(session, txn):
                continue
        else:
            size = session.spec.txn_size
            left = session.remaining()
            if left is not None:
                size = min(size, left)
            recs = tuple(planner.next() for _ in range(size))
            session.new_records += size
            txn = PlannedTxn(next_txn, rng.random() < session.spec.abort_fraction, recs)
            next_txn += 1
        result, replace = runner.run(txn, pacer)
        if result == "redo":
            redo.appendleft(PlannedTxn(txn.txn, False, txn.recs, runner.unanswered))
            session.stop.wait(session.spec.settings["retry_backoff_ms"] / 1000)
        if replace and not session.stop.is_set():
            runner.connect()
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
