"""A Kafka-protocol-aware TCP proxy: one listener per broker, faults set at run time.

It sits in front of each broker's client listener (the broker advertises the proxy's
port, so every client connection passes it; replication and the quorum go direct), and,
with internal routes, in front of its replication listener too (only when the cluster
advertises those ports: ``ClusterSpec.replication_proxied``; then the coordinator's
WriteTxnMarkers to partition leaders pass it). It
reads Kafka frames in both directions, pairs each response with its request (responses
on a connection come back in request order; ``acks=0`` produce requests get none), and
applies the rules of :mod:`verifier.harness.faults.rules`: lose a Produce response after the
broker appended, close the connection instead, delay, blackhole, reset, or hold one
request (its broker-side connection kept open for it) until a later event passes the
proxy, a time has passed or the rule is removed (:mod:`verifier.harness.faults.holds`
decides when). Every hold, release and the released request's answer is an event with
the request's identity (``GET /holds``), which the nemesis copies into the run's history.

Run it as its own process (``python -m verifier.harness.faults.proxy``), controlled over HTTP
on 127.0.0.1 (:mod:`verifier.harness.faults.control`). Every connection's open and close is
written to a JSON-lines log (docs/faults.md) with the client id from the first request; the
close record also carries what the connection did: requests and bytes per API key, its
first request and response, its last frame, and its bursts of answered traffic.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import socket
import struct
from pathlib import Path

from verifier.harness.faults.holds import Held, Holds, now_ms
from verifier.harness.faults.rules import Rule, RuleSet, answers_append
from verifier.harness.kafka_wire import (
    API_PRODUCE,
    MAX_FRAME,
    FrameBuffer,
    RequestIdentity,
    WireError,
    decode_request_header,
    frame,
    produce_acks,
    request_identity,
    response_correlation_id,
)
from verifier.rundata.formats import header

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
#: the most recent dropped responses kept for the control interface
DROP_LOG_SIZE = 10_000
#: responses less than this apart belong to one activity burst of a connection
BURST_GAP_MS = 1000
#: bursts kept per connection; beyond, the last one is extended (bounds the close record)
MAX_BURSTS = 500
_CLOSE = object()  # sentinel in a write queue: close after what is queued before it
#: how long a connection whose client is gone stays open for a held request's answer
HELD_ANSWER_TIMEOUT_S = 30.0


class ConnectionLog:
    """JSON lines: one ``open`` and one ``close`` record per connection, for the proxy's
    lifetime. Started afresh with its header at each start: connection numbers count from
    1 again, so a log continued across proxies would pair one proxy's open with another's
    close (and keep an older version's header over this version's lines)."""

    def __init__(self, path: Path | None) -> None:
        self._file = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - lives with the proxy
            self.write({"type": "header", **header("proxy-connections")})

    def write(self, record: dict) -> None:
        if self._file is not None:
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Connection:
    """One client connection and its upstream twin, with four tasks: a reader and a
    writer per direction (writers hold frames back for latency, keeping order)."""

    def __init__(self, proxy: Proxy, broker: int, conn_id: int,
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
        self.pending: collections.deque[tuple[int, int]] = collections.deque()
        self.requests = self.responses = 0
        #: api key -> [requests, request bytes, response bytes] (key -1: unmatched response)
        self.api: dict[int, list[int]] = {}
        self.first_request_t: int | None = None
        self.first_response_t: int | None = None
        self.last_t: int | None = None  # the last frame in either direction
        #: [start, end] ms of answered traffic, responses closer than BURST_GAP_MS merged
        self.bursts: list[list[int]] = []
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

    def reset(self, reason: str, by: str = "proxy") -> None:
        """Close with an RST (SO_LINGER 0), as a crashed or firewalled peer would."""
        self.end(reason, by)
        sock = self.client_w.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.client_w.transport.abort()
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
            self.to_broker = to_broker
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
        sock = self.client_w.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.client_w.transport.abort()

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
                                 held.request.api_version, held.request, held))
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
                self.pending.append((corr, api_key, version, ident, held))
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
            "requests": self.requests, "responses": self.responses,
            "api": {str(k): v for k, v in sorted(self.api.items())},
            "first_request_t": self.first_request_t, "first_response_t": self.first_response_t,
            "last_t": self.last_t, "activity": self.bursts})
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
                    if acks != 0:  # an acks=0 produce request gets no response
                        self.pending.append((header.correlation_id, header.api_key,
                                             header.api_version, ident, None))
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
        t = now_ms()
        if self.first_request_t is None:
            self.first_request_t = t
        self.last_t = t
        entry = self.api.setdefault(api_key, [0, 0, 0])
        entry[0] += 1
        entry[1] += size
        self.requests += 1
        self.counters["requests"] += 1
        if self.client_id is None and client_id:
            self.client_id = client_id
        self._log_open()

    def _on_response(self, api_key: int | None, size: int) -> None:
        t = now_ms()
        if self.first_response_t is None:
            self.first_response_t = t
        self.last_t = t
        self.api.setdefault(-1 if api_key is None else api_key, [0, 0, 0])[2] += size
        if self.bursts and t - self.bursts[-1][1] < BURST_GAP_MS:
            self.bursts[-1][1] = t
        elif len(self.bursts) >= MAX_BURSTS:
            self.bursts[-1][1] = t
        else:
            self.bursts.append([t, t])

    def _blackholed(self) -> None:
        rule = self.proxy.rules.blackholed(self.broker)
        if rule is not None:
            rule.hits += 1
            rule.note(self.client_id, True)
        self.counters["frames_blackholed"] += 1

    def _match(self, corr: int) -> tuple | None:
        """The pending entry of the request this response answers: (correlation id, api
        key, api version, identity or None, Held or None); None if unknown."""
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
                    corr = response_correlation_id(payload)
                    entry = self._match(corr)
                    api_key = None if entry is None else entry[1]
                    self._on_response(api_key, len(payload) + 4)
                    self.responses += 1
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


class Proxy:
    """Listeners for every broker, the shared rule set, counters and the connection log."""

    def __init__(self, routes: dict[int, tuple[int, int]], host: str = "127.0.0.1",
                 conn_log: Path | None = None, max_frame: int = MAX_FRAME,
                 internal_routes: dict[int, tuple[int, int]] | None = None) -> None:
        self.routes = dict(routes)  # broker -> (listen port, upstream port)
        #: the same for the brokers' replication listeners (broker to broker)
        self.internal_routes = dict(internal_routes or {})
        self.host = host
        self.max_frame = max_frame
        self.rules = RuleSet()
        self.conn_log = ConnectionLog(conn_log)
        self.counters: dict[int, collections.Counter] = {
            b: collections.Counter() for b in self.routes}
        self.drops: collections.deque[dict] = collections.deque(maxlen=DROP_LOG_SIZE)
        self._conns: dict[int, Connection] = {}
        self._servers: list[asyncio.base_events.Server] = []
        self._next_conn = 1
        #: held requests and their events (``GET /holds?since=N``)
        self.holds = Holds(self.rules, self.upstream, list(self.routes))

    def upstream(self, broker: int, internal: bool = False) -> tuple[str, int]:
        return self.host, (self.internal_routes if internal else self.routes)[broker][1]

    async def start(self) -> None:
        for internal, routes in ((False, self.routes), (True, self.internal_routes)):
            for broker, (listen, _) in routes.items():
                server = await asyncio.start_server(
                    lambda r, w, b=broker, i=internal: self._accept(b, r, w, i), self.host,
                    listen, reuse_address=True)
                self._servers.append(server)

    def add_internal_routes(self, routes: dict[int, tuple[int, int]]) -> list[int]:
        """Listen in front of the brokers' replication listeners too, from now on (a
        scenario asks for it: ``proxy_replication``; only then, since these ports belong
        to the cluster's port plan only while it advertises them). A broker's route
        already open stays; a port that cannot be bound is an OSError before any other
        is opened. Returns the ports newly listened on."""
        new = {b: r for b, r in routes.items() if b not in self.internal_routes}
        socks = []
        try:
            for listen, _ in new.values():
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((self.host, listen))
                sock.listen(100)
        except OSError:
            for sock in socks:
                sock.close()
            raise
        loop = asyncio.get_running_loop()
        for (broker, route), sock in zip(new.items(), socks, strict=True):
            self.internal_routes[broker] = route
            self.counters.setdefault(broker, collections.Counter())
            loop.create_task(self._serve_internal(broker, sock))
        return [listen for listen, _ in new.values()]

    async def _serve_internal(self, broker: int, sock: socket.socket) -> None:
        server = await asyncio.start_server(
            lambda r, w, b=broker: self._accept(b, r, w, True), sock=sock)
        self._servers.append(server)

    async def _accept(self, broker: int, reader, writer, internal: bool = False) -> None:
        conn = Connection(self, broker, self._next_conn, reader, writer, internal)
        self._next_conn += 1
        self._conns[conn.id] = conn
        await conn.run()

    def forget(self, conn: Connection) -> None:
        self._conns.pop(conn.id, None)

    def record_drop(self, conn: Connection, corr: int, api_key: int | None, rule: Rule,
                    action: str) -> None:
        key = "responses_dropped" if action == "drop" else "closed_after_append"
        conn.counters[key] += 1
        self.drops.append({"t": now_ms(), "broker": conn.broker, "conn": conn.id,
                           "client_id": conn.client_id, "correlation_id": corr,
                           "api_key": api_key, "rule": rule.id, "action": action})

    # ----- hold (verifier.harness.faults.holds) ------------------------------------------

    @property
    def hold_events(self) -> collections.deque[dict]:
        return self.holds.events

    def watching(self) -> bool:
        return self.holds.watching()

    def identify(self, conn: Connection, payload: bytes) -> RequestIdentity | None:
        try:
            return self.holds.attribute(request_identity(payload))
        except WireError as exc:  # forwarded as it is; only the hold cannot judge it
            conn.counters["unparsed"] += 1
            log.warning("broker %s conn %s: request not parsed for the hold rules: %s",
                        conn.broker, conn.id, exc)
            return None

    def remove_rule(self, rule_id: int) -> Rule | None:
        """Remove one rule; what a hold rule still holds is released first."""
        rule = self.rules.remove(rule_id)
        if rule is not None:
            self.holds.release_rule(rule)
        return rule

    def clear_rules(self) -> list[Rule]:
        removed = self.rules.clear()
        for rule in removed:
            self.holds.release_rule(rule)
        return removed

    def events_since(self, seq: int) -> list[dict]:
        return self.holds.events_since(seq)

    def add_rule(self, data: dict) -> Rule:
        rule = self.rules.add(data)
        if rule.kind == "reset":
            self.reset_connections(rule.broker, rule)
        return rule

    def reset_connections(self, broker: int | None, rule: Rule | None = None) -> int:
        victims = [c for c in self._conns.values() if broker is None or c.broker == broker]
        for conn in victims:
            conn.counters["connections_reset"] += 1
            if rule is not None:
                rule.hits += 1
                rule.note(conn.client_id, True)
            conn.reset("reset by rule" if rule else "reset on request",
                       "fault" if rule else "proxy")
        return len(victims)

    def status(self) -> dict:
        brokers = {}
        for b, (listen, upstream) in self.routes.items():
            brokers[str(b)] = {
                "listen": listen, "upstream": upstream,
                **({"internal": list(self.internal_routes[b])}
                   if b in self.internal_routes else {}),
                "open_connections": sum(1 for c in self._conns.values() if c.broker == b),
                "counters": dict(self.counters[b])}
        totals: collections.Counter = collections.Counter()
        for c in self.counters.values():
            totals.update(c)
        return {"brokers": brokers, "totals": dict(totals),
                "rules": [r.to_json() for r in self.rules.all()]}

    async def close(self) -> None:
        self.holds.close()
        for server in self._servers:
            server.close()
        for conn in list(self._conns.values()):
            conn.end("proxy shutdown", "proxy")
            conn.client_w.transport.abort()
            if conn.up_w is not None:
                conn.up_w.transport.abort()
        for server in self._servers:
            await server.wait_closed()
        self.conn_log.close()


if __name__ == "__main__":
    from verifier.harness.faults.control import main

    raise SystemExit(main())
