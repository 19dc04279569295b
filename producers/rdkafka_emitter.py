"""The librdkafka generator's sending side (:mod:`producers.rdkafka` runs the session):
``invoke`` lines before ``produce()``, completions from the delivery reports that
``poll()``/``flush()`` serve on the generator's own thread, as :mod:`producers.emitter` is
kafka-python's."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any

from producers.rdkafka_outcomes import INFO, OK, classify, describe
from verifier.rundata.history import (
    NO_ACK,
    invoke_send_lines,
    no_ack_send_line,
    now_ms,
    ok_send_line,
)
from verifier.rundata.records import encode_values

if TYPE_CHECKING:
    from producers.generator import Session


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
        #: a pipeline file's records (producers.user_records.RecordMaker), their identity
        #: in a header; None: the tool's values
        self.records = None
        if session.spec.user_input:
            from producers.user_records import RecordMaker

            self.records = RecordMaker.from_plan(dict(session.spec.user_input))

    def send_many(self, idents, txn: int | None = None, abort: bool = False) -> list:
        """Announce and produce; return a :class:`_Pending` per record of a transaction
        (``None`` where produce() raised). Plain sends (``txn`` None) return nothing to
        wait on: their reports go to one callback, ``self._report``, which keeps the
        message (its key names the record), ~1 us a record less than an object each; a
        pipeline file's records (``self.records``) keep the user's key, so each gets its
        own :class:`_Pending`."""
        ts = now_ms()
        records = self.records  # a user's record carries the unpadded value as identity
        values = encode_values(self.run, self.session.spec.pid, self.ses, idents, txn, abort,
                               ts, 0 if records else self.record_size)
        lines = [self._completion_lines(), *invoke_send_lines(self.ses, idents, txn, ts)]
        self.writer.write_raw(b"".join(lines))
        pendings: list = []
        produce, topic, pid, done = self.producer.produce, self.topic, self.pid, self._done
        report = self._report
        for (p, seq), value in zip(idents, values, strict=True):
            # a user's record has the user's key: its report cannot name it, a _Pending does
            callback = report if txn is None and records is None else \
                _Pending(p, seq, txn, done)
            try:
                if records is not None:  # the value is the identity the record carries
                    self._blocking(lambda p=p, seq=seq, value=value, cb=callback:
                                   records.produce(produce, topic, p, seq, value, cb))
                else:
                    try:  # the usual case first: room in librdkafka's queue; positional
                        # (topic, value, key, partition, callback): no keywords to parse
                        produce(topic, value, b"%s:%d:%d" % (pid, p, seq), p, callback)
                    except BufferError:
                        self._blocking(lambda p=p, seq=seq, value=value, cb=callback:
                                       produce(topic, value, b"%s:%d:%d" % (pid, p, seq),
                                               partition=p, on_delivery=cb))
            except Exception as exc:  # noqa: BLE001 - every exception is an outcome here
                self.writer.write_raw(self._line(_Pending(p, seq, txn, done), exc, now_ms(),
                                                 "enqueue"))
                pendings.append(None)
                continue
            pendings.append(callback)
        self.producer.poll(0)
        return pendings if txn is not None else []

    def _blocking(self, attempt) -> None:
        """``attempt()`` (one produce()) until librdkafka's queue has room: a full queue
        blocks, as Java's send() does, up to max.block.ms."""
        deadline = time.monotonic() + self.block_s
        while True:
            try:
                attempt()
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
