"""One send with its history lines: ``invoke`` before, ``ok``/``fail``/``info`` after.

The ``invoke`` line reaches the OS before ``producer.send()`` is called. Sends go in
chunks (:meth:`Emitter.send_many`): the chunk's ``invoke`` lines, with the completions
of the sends found complete meanwhile (their futures read per partition in send order,
no callbacks), reach the OS in one ``write``, then each record is handed to the producer.
So every record is announced before it can leave, and the file has a single writer
thread. One ``write`` per chunk rather than per record matters: each ``write`` releases
the GIL, and taking it back from kafka-python's busy I/O thread cost ~140 us per record
(half the generator's time).

kafka-python 3.0.12 has no ``buffer.memory``: its accumulator grows without bound. The
emitter bounds the bytes in flight itself and waits for the oldest sends to complete
when the bound is reached, as Java's ``send()`` blocks on a full buffer.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable

import orjson
from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

from producers import outcomes
from verifier.rundata.history import (
    NO_ACK,
    HistoryWriter,
    invoke_send_lines,
    no_ack_send_line,
    now_ms,
    ok_send_line,
)
from verifier.rundata.records import encode_values

_dumps = orjson.dumps
FLUSH_STEP_S = 0.1  # a session-end flush writes completions at least this often
PAUSE_STEP_S = 0.02  # so does a pause of the pacer
#: a wait for a send gives up this long after the session's stop was asked for. The run
#: asks once it has healed every fault and the cluster is in sync, so a send still
#: unanswered then is one kafka-python lost track of: a fenced transactional producer's
#: epoch bump left its aborted transaction's futures unresolved, and the stop waited
#: 90 s for them until the run killed the generator (test_safe_cluster, CI 2026-11-30)
STOP_GRACE_S = 10.0
WAIT_STEP_S = 0.5


class Emitter:
    """Sends identity records for one producer session and records every outcome."""

    def __init__(self, producer: KafkaProducer, writer: HistoryWriter, *, topic: str,
                 run: str, pid: str, ses: int, record_size: int, buffer_memory: int,
                 acks: int, completion_timeout_s: float) -> None:
        self.producer, self.writer, self.topic = producer, writer, topic
        self.run, self.pid, self.ses = run, pid, ses
        self.record_size, self.buffer_memory = record_size, buffer_memory
        self.acks = acks
        # a send future always completes by delivery.timeout.ms (batch expiry); the margin
        # covers the request that is in flight when the batch expires
        self.completion_timeout_s = completion_timeout_s
        #: partition -> its sends not yet written as completed, in send order:
        #: ``(future, seq, txn, bytes)``
        self._parts: dict[int, deque] = {}
        #: the same for sends no longer counted in flight (a replaced producer's, or one
        #: unanswered past its deadline), bytes 0, read in any order
        self._orphans: dict[int, deque] = {}
        self._inflight_bytes = 0
        self.sent = 0
        self._identity: tuple[int, int] | None = None  # last (producer id, epoch) written
        #: the user's records (producers.user_records.RecordMaker): their values sent,
        #: the identity in a header; None: the tool's values
        self.records = None
        #: the session's stop (:class:`threading.Event`): a wait ends ``STOP_GRACE_S`` after it
        self.stop: threading.Event | None = None
        self._stop_seen: float | None = None

    def send(self, p: int, seq: int, txn: int | None = None, abort: bool = False):
        """Send record ``(pid, p, seq)``; return its future, or ``None`` if ``send()``
        raised (then the ``fail`` line is already written)."""
        return self.send_many(((p, seq),), txn, abort)[0]

    def send_many(self, idents, txn: int | None = None, abort: bool = False) -> list:
        """Send records ``(pid, p, seq)`` for each ``(p, seq)`` of ``idents``, announced
        by one ``write``; return their futures (``None`` where ``send()`` raised, its
        ``fail`` line then written)."""
        ts = now_ms()
        values = encode_values(self.run, self.pid, self.ses, idents, txn, abort, ts,
                               0 if self.records else self.record_size)
        self._make_room(sum(len(v) for v in values))
        lines = [self._completion_lines(), *invoke_send_lines(self.ses, idents, txn, ts)]
        self.writer.write_raw(b"".join(lines))
        futures = []
        parts, send, topic, key = self._parts, self.producer.send, self.topic, self.pid
        for (p, seq), value in zip(idents, values, strict=True):
            try:
                fut = (send(topic, value, f"{key}:{p}:{seq}".encode(), partition=p)
                       if self.records is None else
                       self.records.send(send, topic, p, seq, value))
            except Exception as exc:  # noqa: BLE001 - every exception is an outcome here
                self.writer.write_raw(self._completion(p, seq, txn, None, exc, now_ms(),
                                                       "enqueue"))
                futures.append(None)
                continue
            q = parts.get(p)
            if q is None:
                q = parts[p] = deque()
            n = len(value)
            q.append((fut, seq, txn, n))
            self._inflight_bytes += n
            self.sent += 1
            futures.append(fut)
        return futures

    def _make_room(self, size: int) -> None:
        """Wait for the oldest sends while the bytes in flight would pass the bound."""
        while self._inflight_bytes + size > self.buffer_memory:
            self.write_completions()
            behind = [(len(q), p) for p, q in self._parts.items() if q]
            if self._inflight_bytes + size <= self.buffer_memory or not behind:
                return
            p = max(behind)[1]  # the partition furthest behind
            q = self._parts[p]
            fut, seq, txn, n = q[0]
            self.wait(fut)
            if not fut.is_done:  # past delivery.timeout.ms: no longer counted here
                q.popleft()
                self._inflight_bytes -= n
                self._orphans.setdefault(p, deque()).append((fut, seq, txn, 0))

    def wait(self, fut) -> BaseException | None:
        """Wait for one send to complete; return its exception (``None``: acknowledged).
        The outcome line is written by :meth:`write_completions`, not here."""
        deadline = time.monotonic() + self.completion_timeout_s
        while True:
            step = min(WAIT_STEP_S, max(0.0, deadline - time.monotonic()))
            try:
                fut.get(timeout=step)
                return None
            except KafkaTimeoutError as exc:
                if fut.is_done:  # the send itself timed out
                    return exc
                now = time.monotonic()
                if now >= deadline:
                    return exc
                if self.stop is not None and self.stop.is_set():
                    self._stop_seen = self._stop_seen or now
                    if now - self._stop_seen >= STOP_GRACE_S:
                        return outcomes.CallTimedOut(
                            f"send not answered {STOP_GRACE_S:.0f}s after the stop")
            except Exception as exc:  # noqa: BLE001 - the outcome is classified elsewhere
                return exc

    def wait_all(self, futures: Iterable) -> list[BaseException]:
        """Wait for every future (``None`` = a send that raised); return the failures."""
        failures: list[BaseException] = []
        for fut in futures:
            exc = RuntimeError("send() raised") if fut is None else self.wait(fut)
            if exc is not None:
                failures.append(exc)
        self.write_completions()
        return failures

    def replace_producer(self, producer: KafkaProducer) -> None:
        """Go on with a new producer (transactional): the old one's unfinished sends are
        still written when they complete, in whatever order."""
        for p, q in self._parts.items():
            self._orphans.setdefault(p, deque()).extend((f, seq, txn, 0) for f, seq, txn, _ in q)
        self._parts.clear()
        self._inflight_bytes = 0
        self.producer = producer

    def flush(self, timeout_s: float) -> None:
        """Send everything buffered and write every completion, in 0.1-s steps so that a
        long flush writes completions (and their times) on the way."""
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:
                    self.producer.flush(timeout=min(FLUSH_STEP_S, timeout_s))
                    return
                except KafkaTimeoutError:
                    if time.monotonic() >= deadline:
                        raise
                    self.write_completions()
        finally:
            self.write_completions(every=True)

    def unanswered(self) -> int:
        """Sends handed to the producer whose answer has not come (after a flush that
        timed out: those the history leaves without an outcome)."""
        return sum(1 for q in self._parts.values() for f, *_ in q if not f.is_done)

    def write_completions(self, every: bool = False) -> None:
        """Write the completions of the sends that completed. A partition's sends are
        read in send order, a later one after the earlier ones (a retried batch can
        complete after the next); ``every``: also those, as at the end of a session."""
        lines = self._completion_lines(every)
        if lines:
            self.writer.write_raw(lines)

    def _completion_lines(self, every: bool = False) -> bytes:
        """The lines of the sends found complete now, ``t`` = now. Not callbacks:
        kafka-python runs them on its I/O thread, holding the GIL, and two per send cost
        the idempotent generator a fifth of its rate (docs/java-generator.md)."""
        t = now_ms()
        out = []
        done = self._completion
        for p, q in self._parts.items():
            while q and q[0][0].is_done:
                fut, seq, txn, n = q.popleft()
                self._inflight_bytes -= n
                out.append(done(p, seq, txn, fut.value, fut.exception, t, "send"))
            if every and q:
                out += self._sweep(q, p, t)
        for p, q in self._orphans.items():
            if q:
                out += self._sweep(q, p, t)
        if not out:
            return b""
        out.append(self.producer_identity_line())
        return b"".join(out)

    def _sweep(self, q: deque, p: int, t: int) -> list[bytes]:
        """Lines of every completed send of ``q`` whatever its place; the rest stay."""
        out, left = [], deque()
        for e in q:
            fut, seq, txn, n = e
            if fut.is_done:
                self._inflight_bytes -= n
                out.append(self._completion(p, seq, txn, fut.value, fut.exception, t,
                                            "send"))
            else:
                left.append(e)
        q.clear()
        q.extend(left)
        return out

    def producer_identity_line(self) -> bytes:
        """A ``producer-id`` line when the broker-assigned (producer id, epoch) is new:
        the evidence that a restart or a KIP-360 bump fenced the old epoch. Empty for a
        producer without one (neither idempotent nor transactional)."""
        tm = getattr(self.producer, "_transaction_manager", None)  # kafka-python internal
        pe = getattr(tm, "producer_id_and_epoch", None)
        if pe is None or pe.producer_id is None or pe.producer_id < 0:
            return b""
        ident = (pe.producer_id, pe.epoch)
        if ident == self._identity:
            return b""
        self._identity = ident
        return _dumps({"type": "producer-id", "ses": self.ses, "producer_id": ident[0],
                       "epoch": ident[1], "t": now_ms()}) + b"\n"

    def _completion(self, p: int, seq: int, txn: int | None, meta, exc, t: int,
                    op: str) -> bytes:
        offset = None if meta is None else meta.offset
        if exc is None and self.acks != 0 and offset is not None and offset >= 0:
            return ok_send_line(self.ses, p, seq, txn, offset, t)
        if exc is None and self.acks == 0:  # every send of at-most-once
            return no_ack_send_line(self.ses, p, seq, txn, t)
        line = {"type": "ok", "f": "send", "ses": self.ses, "p": p, "seq": seq, "txn": txn}
        if exc is None and (self.acks == 0 or offset is None or offset < 0):
            # acks=0: the record left the socket, no broker said it appended it
            line["type"] = outcomes.Outcome.INFO.value
            line["error"] = NO_ACK
        elif exc is None:
            line["offset"] = offset
        else:
            line["type"] = outcomes.classify(exc, op).value
            line["error"] = outcomes.describe(exc)
            if line["type"] == "ok":  # DuplicateSequenceNumber: appended earlier, offset unknown
                line["offset"] = None
        line["t"] = t
        return _dumps(line) + b"\n"


class Pacer:
    """Spaces sends to a target rate (records/s); ``None`` means as fast as possible.

    Waiting on the stop event (not ``time.sleep``) makes a SIGTERM end a pause at once.
    """

    def __init__(self, rate: float | None, stop: threading.Event) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self.stop = stop
        self.start = time.monotonic()
        self.n = 0

    def chunk(self, most: int) -> int:
        """How many records to send at once: ``most`` at full speed, else what fits in
        ~5 ms of the target rate (at least one)."""
        if not self.interval:
            return most
        return max(1, min(most, int(0.005 / self.interval)))

    def due(self) -> int:
        """Records whose time has come but that have not been paced yet: how far
        behind its schedule the sender is (0 when on time, or unbounded)."""
        if not self.interval:
            return 0
        return max(0, int((time.monotonic() - self.start) / self.interval) - self.n)

    def pace(self, before_pause=None, n: int = 1) -> None:
        """Wait until the next ``n`` records are due, writing completions at least every
        ``PAUSE_STEP_S`` meanwhile (their ``t`` is when they are written)."""
        if not self.interval:
            return
        self.n += n
        due = self.start + self.n * self.interval
        while (delay := due - time.monotonic()) > 0.001:
            if before_pause is not None:
                before_pause()  # write completions now, not after the pause
            if self.stop.wait(min(delay, PAUSE_STEP_S)):
                return
