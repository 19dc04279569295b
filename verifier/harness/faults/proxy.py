"""A Kafka-protocol-aware TCP proxy: one listener per broker, faults set at run time.

It sits in front of each broker's client listener (the broker advertises the proxy's
port, so every client connection passes it; replication and the quorum go direct). It
reads Kafka frames in both directions, pairs each response with its request (responses
on a connection come back in request order; ``acks=0`` produce requests get none), and
applies the rules of :mod:`verifier.harness.faults.rules`: lose a Produce response after the
broker appended, close the connection instead, delay, blackhole, reset.

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
import time
from pathlib import Path

from verifier.harness.faults.rules import Rule, RuleSet
from verifier.harness.kafka_wire import (
    API_PRODUCE,
    MAX_FRAME,
    FrameBuffer,
    WireError,
    decode_request_header,
    frame,
    produce_acks,
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


def now_ms() -> int:
    return int(time.time() * 1000)


class ConnectionLog:
    """Append-only JSON lines: one ``open`` and one ``close`` record per connection."""

    def __init__(self, path: Path | None) -> None:
        self._file = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives with the proxy
            if path.stat().st_size == 0:
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
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.proxy, self.broker, self.id = proxy, broker, conn_id
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
                "client_id": self.client_id, "t": self.opened_at})

    async def run(self) -> None:
        self.counters["connections_opened"] += 1
        rules = self.proxy.rules
        try:
            if rules.resetting(self.broker):
                rules.resetting(self.broker).hits += 1
                self.counters["connections_reset"] += 1
                self.reset("reset by rule on connect", "fault")
                return
            try:
                up_r, self.up_w = await asyncio.open_connection(*self.proxy.upstream(self.broker))
            except OSError as exc:
                self.end(f"upstream connect failed: {exc}", "broker")
                return
            to_broker: asyncio.Queue = asyncio.Queue()
            to_client: asyncio.Queue = asyncio.Queue()
            tasks = [asyncio.create_task(c) for c in (
                self._read_requests(to_broker), self._read_responses(up_r, to_client),
                self._write(to_broker, self.up_w, "broker"),
                self._write(to_client, self.client_w, "client"))]
            _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            self._close()

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
                    if acks != 0:  # an acks=0 produce request gets no response
                        self.pending.append((header.correlation_id, header.api_key))
                    delay = self.proxy.rules.delay(self.broker, downstream=False)
                    out.put_nowait((loop.time() + delay, frame(payload)))
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
        self.counters["frames_blackholed"] += 1

    def _match(self, corr: int) -> int | None:
        """The api key of the request this response answers (None if unknown)."""
        while self.pending:
            pcorr, api_key = self.pending.popleft()
            if pcorr == corr:
                return api_key
            # Responses come in request order; a skipped entry had no response.
            log.debug("conn %s: no response for correlation id %s", self.id, pcorr)
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
                    api_key = self._match(corr)
                    self._on_response(api_key, len(payload) + 4)
                    self.responses += 1
                    self.counters["responses"] += 1
                    if self.proxy.rules.blackholed(self.broker):
                        self._blackholed()
                        continue
                    hit = self.proxy.rules.response_action(self.broker, api_key)
                    if hit is not None:
                        action, rule = hit
                        self.proxy.record_drop(self, corr, api_key, rule, action)
                        if action == "close":
                            out.put_nowait((loop.time(), _CLOSE))
                            return self.end(f"closed after append by rule {rule.id}", "fault")
                        continue
                    delay = self.proxy.rules.delay(self.broker, downstream=True)
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
                 conn_log: Path | None = None, max_frame: int = MAX_FRAME) -> None:
        self.routes = dict(routes)  # broker -> (listen port, upstream port)
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

    def upstream(self, broker: int) -> tuple[str, int]:
        return self.host, self.routes[broker][1]

    async def start(self) -> None:
        for broker, (listen, _) in self.routes.items():
            server = await asyncio.start_server(
                lambda r, w, b=broker: self._accept(b, r, w), self.host, listen,
                reuse_address=True)
            self._servers.append(server)

    async def _accept(self, broker: int, reader, writer) -> None:
        conn = Connection(self, broker, self._next_conn, reader, writer)
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
            conn.reset("reset by rule" if rule else "reset on request",
                       "fault" if rule else "proxy")
        return len(victims)

    def status(self) -> dict:
        brokers = {}
        for b, (listen, upstream) in self.routes.items():
            brokers[str(b)] = {
                "listen": listen, "upstream": upstream,
                "open_connections": sum(1 for c in self._conns.values() if c.broker == b),
                "counters": dict(self.counters[b])}
        totals: collections.Counter = collections.Counter()
        for c in self.counters.values():
            totals.update(c)
        return {"brokers": brokers, "totals": dict(totals),
                "rules": [r.to_json() for r in self.rules.all()]}

    async def close(self) -> None:
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
