"""The load generator: one logical producer, one session per process (DESIGN §3-4).

A session opens the producer's history (``RUN/histories/<pid>.jsonl``), learns from it
what earlier sessions left undone (:mod:`producers.resume`), writes its ``session`` line
and runs its mode's loop until ``--count`` new records, ``--duration`` seconds or a
SIGTERM. A clean stop finishes or aborts the open transaction, flushes and closes.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kafka.errors as KE
from kafka import KafkaProducer

from producers import config as cfg
from producers.clients import client_version
from producers.emitter import Emitter, Pacer
from producers.resume import ResumeState, resume_state
from verifier.rundata.errors import ClusterUnreachable, UsageError
from verifier.rundata.history import HistoryWriter, history_path, now_ms, read_history

#: records announced by one history write and then sent (see producers.emitter)
CHUNK = 64


@dataclass(frozen=True)
class GeneratorSpec:
    """Everything one generator process needs, as plain data (the CLI builds it)."""

    run_dir: Path
    run_id: str
    mode: str
    pid: str
    topic: str
    bootstrap_servers: str
    settings: Mapping[str, Any]
    partitions: tuple[int, ...] | None = None
    count: int | None = None
    duration: float | None = None
    rate: float | None = None
    txn_size: int = 10
    abort_fraction: float = 0.0
    seed: int = 0
    input_topic: str | None = None  # transactional copier variant
    connect_timeout: float = 30.0
    #: a pipeline file's declared topic this generator writes (issue 46; config.json
    #: ``user_input.<pid>``): ``{"spec", "topic", "partitions"}``; None: the tool's values
    user_input: Mapping[str, Any] | None = None

    @property
    def history_path(self) -> Path:
        return history_path(self.run_dir, self.pid)


#: The cyclic GC's thresholds while sending (CPython's default: 700, 10, 10).
GC_THRESHOLDS = (20_000, 20, 100)


def steady_gc() -> None:
    """Take what start-up built (modules, the producer, its metadata) out of the cyclic
    GC's reach (``gc.freeze``) and collect young objects less often. A producer keeps
    tens of thousands of sends in flight, each with a future, a lock and lists, that live
    through several young collections; with the defaults the collector walked them over
    and over: ~15% of a kafka-python generator's CPU per record (24.6-25.5 us against
    30.3-31.0 us in a 100,000-record idempotent loop, the bare loop 24.4-26.6). Cycles
    are still collected, on a longer period."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class Planner:
    """Round-robin partitions and a dense sequence per partition."""

    def __init__(self, partitions: tuple[int, ...], next_seq: dict[int, int]) -> None:
        self.partitions = partitions
        self.next_seq = {p: next_seq.get(p, 0) for p in partitions}
        self._i = 0

    def next(self) -> tuple[int, int]:
        p = self.partitions[self._i % len(self.partitions)]
        self._i += 1
        seq = self.next_seq[p]
        self.next_seq[p] = seq + 1
        return p, seq

    def take(self, k: int) -> list[tuple[int, int]]:
        """The next ``k`` of :meth:`next`, in the same order, in one call (the plain
        loop's chunk: a call per record cost ~0.1 us of a librdkafka send's ~2.5)."""
        parts, n, start = self.partitions, len(self.partitions), self._i
        out = []
        for i in range(start, start + k):
            p = parts[i % n]
            seq = self.next_seq[p]
            self.next_seq[p] = seq + 1
            out.append((p, seq))
        self._i = start + k
        return out


class Session:
    """One running session: history writer, stop signal, budget, producer factory."""

    def __init__(self, spec: GeneratorSpec) -> None:
        self.spec = spec
        self.stop = threading.Event()
        previous = read_history(spec.history_path) if spec.history_path.exists() else None
        self.resume: ResumeState = resume_state(previous)
        self.ses = self.resume.session
        self.started = time.monotonic()
        self.new_records = 0
        self.writer: HistoryWriter | None = None
        #: what the session line names: the client, its version, its effective config
        self.client = "kafka-python"
        self.session_config: dict | None = None  # None: the settings, redacted

    # --- budget -------------------------------------------------------------------------
    def remaining(self) -> int | None:
        """New records still allowed by ``--count`` (``None``: no count limit)."""
        return None if self.spec.count is None else self.spec.count - self.new_records

    def running(self) -> bool:
        if self.stop.is_set():
            return False
        if self.spec.duration is not None and time.monotonic() - self.started >= self.spec.duration:
            return False
        left = self.remaining()
        return left is None or left > 0

    # --- producer -----------------------------------------------------------------------
    def build_producer(self) -> KafkaProducer:
        # an unreachable cluster is reported once, as ClusterUnreachable
        try:
            with cfg.quiet_kafka_logs():
                # the fault proxy's connection log names the process by its client id
                name = {} if "client_id" in self.spec.settings else {
                    "client_id": f"verifier.generator.{self.spec.pid}"}
                return cfg.build_producer(self.spec.settings, self.spec.bootstrap_servers,
                                          bootstrap_timeout_s=self.spec.connect_timeout,
                                          **name)
        except (KE.KafkaTimeoutError, KE.KafkaConnectionError) as exc:
            raise ClusterUnreachable(
                f"cannot reach Kafka at {self.spec.bootstrap_servers}: {exc}") from None

    def partitions(self, producer: KafkaProducer) -> tuple[int, ...]:
        try:  # kafka-python waits up to max.block.ms for a topic it does not know
            known = producer.partitions_for(self.spec.topic)
        except KE.KafkaTimeoutError:
            raise ClusterUnreachable(
                f"topic {self.spec.topic} not found at {self.spec.bootstrap_servers} within "
                f"max.block.ms ({self.spec.settings['max_block_ms']} ms): create it first "
                "(a verifier run creates its own)") from None
        if not known:
            raise ClusterUnreachable(f"topic {self.spec.topic} has no partitions")
        if self.spec.partitions is None:
            return tuple(sorted(known))
        missing = sorted(set(self.spec.partitions) - set(known))
        if missing:
            raise UsageError(f"--partitions {missing} do not exist in topic {self.spec.topic} "
                             f"(it has {sorted(known)})")
        return self.spec.partitions

    def open_history(self, partitions: tuple[int, ...]) -> HistoryWriter:
        """The history, opened once the producer is built and its partitions known: the
        moment before the first send, so also where the process's GC is set for the
        sending (:func:`steady_gc`)."""
        steady_gc()
        header = {"run": self.spec.run_id, "pid": self.spec.pid, "mode": self.spec.mode,
                  "topic": self.spec.topic, "partitions": list(partitions)}
        if self.spec.input_topic:
            header["input_topic"] = self.spec.input_topic
        self.writer = HistoryWriter(self.spec.history_path, header)
        self.writer.write({"type": "session", "ses": self.ses, "t": now_ms(),
                           "config": self.session_config or cfg.redacted(self.spec.settings),
                           "os_pid": os.getpid(), "client": self.client,
                           "client_version": client_version(self.client)})
        return self.writer

    def emitter(self, producer: KafkaProducer) -> Emitter:
        s = self.spec.settings
        assert self.writer is not None
        em = Emitter(producer, self.writer, topic=self.spec.topic, run=self.spec.run_id,
                     pid=self.spec.pid, ses=self.ses, record_size=s["record_size"],
                     buffer_memory=s["buffer_memory"], acks=s["acks"],
                     completion_timeout_s=(s["delivery_timeout_ms"]
                                           + s["request_timeout_ms"]) / 1000)
        em.stop = self.stop
        if self.spec.user_input:
            from producers.user_records import RecordMaker

            em.records = RecordMaker.from_plan(dict(self.spec.user_input))
        return em

    def close_producer(self, producer: KafkaProducer, timeout_s: float) -> None:
        try:
            producer.close(timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001 - closing a broken producer may fail
            print(f"producer close: {type(exc).__name__}: {exc}", file=sys.stderr)


def run_plain(session: Session) -> None:
    """at-most-once, at-least-once and idempotent: re-send what the history does not show
    as acknowledged (every mode but at-most-once), then new records until the budget or a
    stop."""
    producer = session.build_producer()
    try:
        partitions = session.partitions(producer)
        session.open_history(partitions)
        em = session.emitter(producer)
        send_plain(session, em, partitions)
        final_flush(em, session.spec.settings["delivery_timeout_ms"] / 1000)
    finally:
        session.close_producer(producer, 10)


def final_flush(em: Emitter, timeout_s: float) -> None:
    """The session's last flush; one that times out (the cluster not answering at the
    end, as under a broker fault) is said in one line, exit 2, not a traceback: the
    history already holds every answer that came, the rest stay unknown."""
    try:
        em.flush(timeout_s)
    except KE.KafkaTimeoutError:
        raise ClusterUnreachable(f"the final flush timed out after {timeout_s:.0f} s with "
                                 f"{em.unanswered()} sends unanswered: the history leaves "
                                 "them without an outcome (judged as unknown)") from None


def send_plain(session: Session, em, partitions) -> None:
    """The plain modes' loop, whatever the client (``em``: an emitter with
    ``send_many`` and ``write_completions``): re-send what the history does not show as
    acknowledged (every mode but at-most-once), then new records until the budget or a
    stop, on the session's schedule."""
    pacer = Pacer(session.spec.rate, session.stop)
    if session.spec.mode != "at-most-once":
        resend = session.resume.unacked  # same ids: cross-session duplicates
        i = 0
        while i < len(resend) and not session.stop.is_set():
            chunk = resend[i:i + pacer.chunk(CHUNK)]
            pacer.pace(em.write_completions, len(chunk))
            em.send_many(chunk)
            i += len(chunk)
    planner = Planner(partitions, session.resume.next_seq)
    while session.running():
        left = session.remaining()
        k = pacer.chunk(CHUNK if left is None else min(CHUNK, left))
        pacer.pace(em.write_completions, k)
        em.send_many(planner.take(k))
        session.new_records += k


def install_stop_handlers(stop: threading.Event) -> None:
    """SIGTERM and SIGINT ask for a clean stop (the loop notices between sends)."""
    def handler(signum, _frame):
        print(f"received signal {signum}: stopping cleanly", flush=True)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
