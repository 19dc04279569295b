"""A Kafka-protocol-aware TCP proxy: one listener per broker, faults set at run time.

It sits in front of each broker's client listener (the broker advertises the proxy's
port, so every client connection passes it; replication and the quorum go direct), and,
with internal routes, in front of its replication listener too (only when the cluster
advertises those ports: ``ClusterSpec.replication_proxied``; then the coordinator's
WriteTxnMarkers to partition leaders pass it). Each connection
(:mod:`verifier.harness.faults.connection`) reads Kafka frames in both directions, pairs
each response with its request, and applies the rules of
:mod:`verifier.harness.faults.rules`: lose a Produce response after the broker appended,
close the connection instead, delay, blackhole, reset, or hold one request (its
broker-side connection kept open for it) until a later event passes the proxy, a time has
passed or the rule is removed (:mod:`verifier.harness.faults.holds` decides when). Every
hold, release and the released request's answer is an event with the request's identity
(``GET /holds``), which the nemesis copies into the run's history.

Run it as its own process (``python -m verifier.harness.faults.proxy``, :func:`main`),
controlled over HTTP on 127.0.0.1 (:mod:`verifier.harness.faults.control`). Every
connection's open and close is written to a JSON-lines log (docs/faults.md) with the
client id from the first request; the close record also carries what the connection did:
requests and bytes per API key, its first request and response, its last frame, and its
bursts of answered traffic.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import signal
import socket
from pathlib import Path

from verifier.harness.faults.connection import Connection
from verifier.harness.faults.connection_log import ConnectionLog
from verifier.harness.faults.control import handle_http
from verifier.harness.faults.holds import Holds, now_ms
from verifier.harness.faults.rules import Rule, RuleSet
from verifier.harness.kafka_wire import MAX_FRAME, RequestIdentity, WireError, request_identity

log = logging.getLogger(__name__)

#: the most recent dropped responses kept for the control interface
DROP_LOG_SIZE = 10_000


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


async def serve(proxy: Proxy, control_port: int, host: str = "127.0.0.1") -> None:
    """Run the proxy and its control interface until SIGTERM or SIGINT."""
    await proxy.start()
    server = await asyncio.start_server(lambda r, w: handle_http(proxy, r, w), host,
                                        control_port, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.warning("proxy ready: control on %s:%s, routes %s", host, control_port, proxy.routes)
    await stop.wait()
    server.close()
    await proxy.close()


def _route_arg(text: str) -> tuple[int, tuple[int, int]]:
    try:
        broker, ports = text.split("=")
        listen, upstream = ports.split(":")
        return int(broker), (int(listen), int(upstream))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected BROKER=LISTEN:UPSTREAM, got {text!r}") from exc


def main(argv: list[str] | None = None) -> int:
    """``python -m verifier.harness.faults.proxy --control-port P --route 1=LISTEN:UPSTREAM ...``"""
    p = argparse.ArgumentParser(prog="python -m verifier.harness.faults.proxy",
                                description="Kafka-aware fault proxy")
    p.add_argument("--control-port", type=int, required=True)
    p.add_argument("--route", type=_route_arg, action="append", required=True,
                   help="BROKER=LISTEN_PORT:BROKER_PORT, once per broker")
    p.add_argument("--internal-route", type=_route_arg, action="append", default=[],
                   help="BROKER=LISTEN_PORT:BROKER_PORT of its replication listener "
                        "(used when the cluster advertises it: WriteTxnMarkers pass)")
    p.add_argument("--connection-log", type=Path, default=None)
    p.add_argument("--max-frame", type=int, default=MAX_FRAME)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    proxy = Proxy(dict(args.route), conn_log=args.connection_log, max_frame=args.max_frame,
                  internal_routes=dict(args.internal_route))
    asyncio.run(serve(proxy, args.control_port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
