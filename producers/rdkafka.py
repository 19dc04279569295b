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
- delivery reports arrive from ``poll()``/``flush()`` on the generator's own thread
  (:mod:`producers.rdkafka_emitter`);
- librdkafka does not expose its producer id and epoch, so its histories have no
  ``producer-id`` lines.
"""

from __future__ import annotations

import os
import sys

from producers.emitter import Pacer
from producers.generator import (
    CHUNK,
    GeneratorSpec,
    Planner,
    Session,
    send_plain,
)
from producers.rdkafka_emitter import RdEmitter
from producers.rdkafka_outcomes import (
    CLIENT,
    FAIL,
    INFO,
    classify,
    describe,
    librdkafka_config,
    redacted_config,
)
from producers.resume import PlannedTxn
from verifier.rundata.errors import ClusterUnreachable, UsageError
from verifier.rundata.history import now_ms

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
        # for the process log, as the other clients' generators say it (librdkafka does
        # not expose its producer id and epoch): one line per producer initialized
        print(f"transactional.id {self.conf['transactional.id']}: initialized", flush=True)
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
