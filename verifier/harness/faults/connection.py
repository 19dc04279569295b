"""One client connection through the fault proxy (verifier.harness.faults.proxy) and its
upstream twin: four tasks, a reader and a writer per direction. The readers split the
streams into Kafka frames, pair each response with its request (responses on a
connection come back in request order; ``acks=0`` produce requests get none) and apply
the proxy's rules (verifier.harness.faults.rules) and holds
(verifier.harness.faults.holds); the writers hold frames back for latency, keeping order.
What the connection did is its close record in the proxy's connection log.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import struct
from typing import Protocol

from verifier.harness.faults import forging
from verifier.harness.faults.connection_log import ConnectionLog, Traffic
from verifier.harness.faults.holds import Held, Holds, now_ms
from verifier.harness.faults.rules import Rule, RuleSet, answers_append
from verifier.harness.kafka_wire import (
    API_PRODUCE,
    FrameBuffer,
    RequestIdentity,
    WireError,
    decode_request_header,
    frame,
    produce_acks,
    response_correlation_id,
)

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
_CLOSE = object()  # sentinel in a write queue: close after what is queued before it
#: how long a connection whose client is gone stays open for a held request's answer
HELD_ANSWER_TIMEOUT_S = 30.0


class Host(Protocol):
    """What a connection needs of the proxy it belongs to."""

    rules: RuleSet
    holds: Holds
    conn_log: ConnectionLog
    max_frame: int
    counters: dict[int, collections.Counter]

    def upstream(self, broker: int, internal: bool = False) -> tuple[str, int]: ...

    def watching(self) -> bool: ...

    def identify(self, conn: Connection, payload: bytes) -> RequestIdentity | None: ...

    def record_drop(self, conn: Connection, corr: int, api_key: int | None, rule: Rule,
                    action: str) -> None: ...

    def forget(self, conn: Connection) -> None: ...


class Connection:
    """One client connection and its upstream twin, with four tasks: a reader and a
    writer per direction (writers hold frames back for latency, keeping order)."""

    def __init__(self, proxy: Host, broker: int, conn_id: int,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 internal: bool = False) -> None:
        self.proxy, self.broker, self.id = proxy, broker, conn_id
        #: on the broker's replication listener (broker to broker), not a client's
        self.internal = internal
        self.client_r, self.client_w = reader, writer
        self.up_w: asyncio.StreamWriter | None = None
        self.client_id: str | None = None
        host, port = writer.get_extra_info("peername")[:2]
        self.peer = f"{host}:{port}"
        self.opened_at = now_ms()
        #: the requests awaiting an answer, in order: (correlation id, api key, api
        #: version, identity or None, Held or None, forged): forged is None, the
        #: error_answer rule that replaces the broker's answer, or a refused request's
        #: answer (bytes), sent to the client in its turn
        self.pending: collections.deque[tuple] = collections.deque()
        self.to_client: asyncio.Queue | None = None
        self.traffic = Traffic()
        self.reason: str | None = None
        self.by: str | None = None
        self._logged_open = False
        self.to_broker: asyncio.Queue | None = None
        #: a hold with client_view "timeout": nothing more is forwarded for this client
        self.stalled = False
        #: the client's side ended while a held request still needs the broker's side
        self.client_gone = False
        #: frames a ``then_hold`` gate holds back, in arrival order: (payload, correlation
        #: id, api key, api version, acks, identity, Held of the first); None: not gated
        self.deferred: list[tuple] | None = None
        #: held requests not yet answered by the broker (released or not)
        self.held_open = 0
        self.held_done = asyncio.Event()

    @property
    def counters(self) -> collections.Counter:
        return self.proxy.counters[self.broker]

    def end(self, reason: str, by: str) -> None:
        """Record why the connection ends; the first reason wins."""
        if self.reason is None:
            self.reason, self.by = reason, by

    def _abort_client(self) -> None:
        """RST the client's side (SO_LINGER 0), as a crashed or firewalled peer would."""
        sock = self.client_w.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.client_w.transport.abort()

    def reset(self, reason: str, by: str = "proxy") -> None:
        """Close both sides with an RST."""
        self.end(reason, by)
        self._abort_client()
        if self.up_w is not None:
            self.up_w.transport.abort()

    def _log_open(self) -> None:
        if not self._logged_open:
            self._logged_open = True
            self.proxy.conn_log.write({
                "event": "open", "conn": self.id, "broker": self.broker, "peer": self.peer,
                "client_id": self.client_id, "t": self.opened_at,
                **({"listener": "internal"} if self.internal else {})})

    async def run(self) -> None:
        self.counters["connections_opened"] += 1
        rules = self.proxy.rules
        try:
            if rules.resetting(self.broker):
                rules.resetting(self.broker).hits += 1
                rules.resetting(self.broker).note(self.client_id, True)
                self.counters["connections_reset"] += 1
                self.reset("reset by rule on connect", "fault")
                return
            try:
                up_r, self.up_w = await asyncio.open_connection(
                    *self.proxy.upstream(self.broker, self.internal))
            except OSError as exc:
                self.end(f"upstream connect failed: {exc}", "broker")
                return
            to_broker: asyncio.Queue = asyncio.Queue()
            to_client: asyncio.Queue = asyncio.Queue()
            self.to_broker, self.to_client = to_broker, to_client
            tasks = [asyncio.create_task(c) for c in (
                self._read_requests(to_broker), self._read_responses(up_r, to_client),
                self._write(to_broker, self.up_w, "broker"),
                self._write(to_client, self.client_w, "client"))]
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            upstream = {tasks[1], tasks[2]}
            if self.held_open and not done & upstream:
                # the client's side ended (it gave up, or the hold reset it) while a held
                # request still needs the broker's side: keep that open until the broker
                # has answered every held request (or the broker closes, or a deadline)
                self.client_gone = True
                for t in pending - upstream:
                    t.cancel()
                waiter = asyncio.create_task(self.held_done.wait())
                await asyncio.wait([waiter, *(pending & upstream)],
                                   timeout=HELD_ANSWER_TIMEOUT_S + self._longest_hold_s(),
                                   return_when=asyncio.FIRST_COMPLETED)
                pending = {*pending, waiter}
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            self._close()

    def _longest_hold_s(self) -> float:
        """The latest a request held on this connection can still be released."""
        waits = [h.rule.release_after_ms / 1000 for h in self.proxy.holds.held_on(self)
                 if h.rule.release_after_ms and not h.released]
        return max(waits, default=0.0) or 600.0

    def reset_client(self, reason: str) -> None:
        """RST the client's side only (a hold with client_view "reset"): the broker's
        side stays open for the held request."""
        self.end(reason, "fault")
        self._abort_client()

    def send_released(self, held: Held) -> bool:
        """Queue a released request to the broker on this connection; False if the
        broker's side is gone."""
        if self.up_w is None or self.up_w.is_closing() or self.to_broker is None:
            self.held_answered()
            return False
        if held.request.acks == 0:  # no answer will come
            self.held_answered()
        else:
            self.pending.append((held.request.correlation_id, held.request.api_key,
                                 held.request.api_version, held.request, held, None))
        self.to_broker.put_nowait((asyncio.get_running_loop().time(), frame(held.payload)))
        return True

    def flush_deferred(self) -> bool:
        """Forward what a gate held back on this connection, in order; False if the
        broker's side is gone."""
        frames, self.deferred = self.deferred or [], None
        if self.up_w is None or self.up_w.is_closing() or self.to_broker is None:
            for *_, held in frames:
                if held is not None:
                    self.held_answered()
            return False
        loop = asyncio.get_running_loop()
        for payload, corr, api_key, version, acks, ident, held in frames:
            if acks != 0:
                self.pending.append((corr, api_key, version, ident, held, None))
            elif held is not None:
                self.held_answered()
            self.to_broker.put_nowait((loop.time(), frame(payload)))
            if ident is not None:
                self.proxy.holds.passed(ident, "request")
        return True

    def held_answered(self) -> None:
        self.held_open -= 1
        if self.held_open <= 0:
            self.held_done.set()

    def _close(self) -> None:
        for w in (self.client_w, self.up_w):
            if w is not None and not w.is_closing():
                w.close()
        self._log_open()
        self.end("proxy shutdown", "proxy")
        self.counters["connections_closed"] += 1
        self.proxy.conn_log.write({
            "event": "close", "conn": self.id, "broker": self.broker, "peer": self.peer,
            "client_id": self.client_id, "t": now_ms(), "reason": self.reason, "by": self.by,
            **({"listener": "internal"} if self.internal else {}),
            **self.traffic.to_json()})
        self.proxy.forget(self)

    async def _read_requests(self, out: asyncio.Queue) -> None:
        buf = FrameBuffer(self.proxy.max_frame)
        loop = asyncio.get_running_loop()
        while True:
            data = await self.client_r.read(READ_CHUNK)
            if not data:
                return self.end("client closed", "client")
            try:
                frames = buf.feed(data)
                for payload in frames:
                    header = decode_request_header(payload)
                    acks = produce_acks(payload) if header.api_key == API_PRODUCE else None
                    self._on_request(header.client_id, header.api_key, len(payload) + 4)
                    if self.proxy.rules.blackholed(self.broker):
                        self._blackholed()
                        continue
                    if self.stalled:  # a hold stalled this connection for its client
                        self.counters["frames_swallowed"] += 1
                        continue
                    ident = self.proxy.identify(self, payload) if self.proxy.watching() else None
                    if self.deferred is not None:  # behind a request a gate holds back
                        self.deferred.append((payload, header.correlation_id, header.api_key,
                                              header.api_version, acks, ident, None))
                        continue
                    if ident is not None:
                        gate = self.proxy.rules.gate_for(self.broker, ident)
                        if gate is not None:
                            self.proxy.holds.gate(gate, self, payload, ident, acks)
                            continue
                        rule = self.proxy.rules.hold_for(self.broker, ident)
                        if rule is not None:
                            self.proxy.holds.hold(rule, self, payload, ident)
                            if rule.client_view != "copy":  # a copy's original goes on
                                continue
                    forge = None if ident is None else \
                        self.proxy.rules.error_for(self.broker, ident)
                    if forge is not None and forge.variant == "refuse":
                        if forging.refuse(self, forge, payload, header.correlation_id):
                            continue
                        forge = None  # not forgeable: forwarded, its answer untouched
                    if acks != 0:  # an acks=0 produce request gets no response
                        self.pending.append((header.correlation_id, header.api_key,
                                             header.api_version, ident, None, forge))
                    delay = self.proxy.rules.delay(self.broker, downstream=False,
                                                   client_id=self.client_id)
                    out.put_nowait((loop.time() + delay, frame(payload)))
                    if ident is not None:  # after the trigger went on its way
                        self.proxy.holds.passed(ident, "request")
            except WireError as exc:
                self.counters["malformed"] += 1
                log.warning("broker %s conn %s: closing, malformed request: %s",
                            self.broker, self.id, exc)
                return self.end(f"malformed request: {exc}", "proxy")

    def _on_request(self, client_id: str | None, api_key: int, size: int) -> None:
        self.traffic.request(api_key, size)
        self.counters["requests"] += 1
        if self.client_id is None and client_id:
            self.client_id = client_id
        self._log_open()

    def _blackholed(self) -> None:
        rule = self.proxy.rules.blackholed(self.broker)
        if rule is not None:
            rule.hits += 1
            rule.note(self.client_id, True)
        self.counters["frames_blackholed"] += 1

    def _match(self, corr: int) -> tuple | None:
        """The pending entry of the request this response answers (see ``pending``);
        None if unknown."""
        while self.pending:
            entry = self.pending.popleft()
            if entry[0] == corr:
                return entry
            # Responses come in request order; a skipped entry had no response.
            log.debug("conn %s: no response for correlation id %s", self.id, entry[0])
        return None

    async def _read_responses(self, up_r: asyncio.StreamReader, out: asyncio.Queue) -> None:
        buf = FrameBuffer(self.proxy.max_frame)
        loop = asyncio.get_running_loop()
        while True:
            data = await up_r.read(READ_CHUNK)
            if not data:
                return self.end("broker closed", "broker")
            try:
                frames = buf.feed(data)
                for payload in frames:
                    forging.send_refused(self)
                    corr = response_correlation_id(payload)
                    entry = self._match(corr)
                    if entry is not None and entry[5] is not None:  # error_answer replace
                        payload = forging.replace(self, entry[5], payload, entry[1], entry[2])
                    api_key = None if entry is None else entry[1]
                    self.traffic.response(api_key, len(payload) + 4)
                    self.counters["responses"] += 1
                    if entry is not None and entry[4] is not None:  # a released request
                        copy = entry[4].copy  # the client had the original's answer
                        self.proxy.holds.answered(entry[4], payload,
                                            to_client=not (self.client_gone or copy))
                        if self.client_gone or copy:
                            continue
                    elif self.client_gone:
                        continue
                    if entry is not None and entry[3] is not None:
                        self.proxy.holds.passed(entry[3], "response", payload)
                    if self.proxy.rules.blackholed(self.broker):
                        self._blackholed()
                        continue
                    hit = self.proxy.rules.response_action(
                        self.broker, api_key, self.client_id,
                        None if entry is None else
                        lambda p=payload, v=entry[2]: answers_append(p, v))
                    if hit is not None:
                        action, rule = hit
                        self.proxy.record_drop(self, corr, api_key, rule, action)
                        if action == "close":
                            out.put_nowait((loop.time(), _CLOSE))
                            return self.end(f"closed after append by rule {rule.id}", "fault")
                        continue
                    delay = self.proxy.rules.delay(self.broker, downstream=True,
                                                   client_id=self.client_id)
                    out.put_nowait((loop.time() + delay, frame(payload)))
                forging.send_refused(self)
            except WireError as exc:
                self.counters["malformed"] += 1
                return self.end(f"malformed response: {exc}", "proxy")

    async def _write(self, queue: asyncio.Queue, writer: asyncio.StreamWriter, side: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                deliver_at, data = await queue.get()
                wait = deliver_at - loop.time()
                if wait > 0:
                    self.counters["frames_delayed"] += 1
                    await asyncio.sleep(wait)  # the latency fault itself
                if data is _CLOSE:
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError) as exc:
            self.end(f"write to {side} failed: {exc}", side)
