"""The proxy's control interface: a tiny HTTP/JSON API on 127.0.0.1, like toxiproxy's.

    GET    /status              counters per broker, totals, active rules
    GET    /drops               the most recent dropped/closed responses
    POST   /rules   {rule}      set a rule (verifier.harness.faults.rules); returns it with its id
    DELETE /rules/<id>          remove one rule; returns it with its final counters
    DELETE /rules               remove every rule (heal); returns them
    GET    /holds?since=N       hold / release / answer events after number N
    POST   /reset   {"broker"}  RST the open connections (of one broker, or all)

The proxy process serves it (verifier.harness.faults.proxy's ``main``);
:class:`ProxyClient` is the caller's side (standard library only, so a human can use
``curl`` just as well).
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import urllib.error
import urllib.request
from typing import Protocol

from verifier.harness.faults.rules import Rule, RuleError
from verifier.rundata.errors import VerifierError

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024


class ProxyControlError(VerifierError):
    """The proxy's control interface refused a call or cannot be reached."""


class Controlled(Protocol):
    """What the control interface calls on the proxy (verifier.harness.faults.proxy)."""

    drops: collections.deque[dict]

    def status(self) -> dict: ...

    def add_rule(self, data: dict) -> Rule: ...

    def remove_rule(self, rule_id: int) -> Rule | None: ...

    def clear_rules(self) -> list[Rule]: ...

    def events_since(self, seq: int) -> list[dict]: ...

    def add_internal_routes(self, routes: dict[int, tuple[int, int]]) -> list[int]: ...

    def reset_connections(self, broker: int | None) -> int: ...


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def route(proxy: Controlled, method: str, path: str, body: dict | None) -> tuple[int, object]:
    """Dispatch one API call; returns (HTTP status, JSON body)."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if method == "GET" and parts == ["status"]:
        return 200, proxy.status()
    if method == "GET" and parts == ["drops"]:
        return 200, list(proxy.drops)
    if method == "POST" and parts == ["rules"]:
        try:
            return 201, proxy.add_rule(body or {}).to_json()
        except RuleError as exc:
            raise _HttpError(400, str(exc)) from exc
    if method == "GET" and parts == ["holds"]:
        query = dict(q.partition("=")[::2] for q in path.partition("?")[2].split("&") if q)
        try:
            since = int(query.get("since") or 0)
        except ValueError as exc:
            raise _HttpError(400, f"since must be an integer: {exc}") from exc
        return 200, proxy.events_since(since)
    if method == "DELETE" and parts == ["rules"]:
        return 200, [r.to_json() for r in proxy.clear_rules()]
    if method == "DELETE" and len(parts) == 2 and parts[0] == "rules" and parts[1].isdigit():
        rule = proxy.remove_rule(int(parts[1]))
        if rule is None:
            raise _HttpError(404, f"no rule {parts[1]}")
        return 200, rule.to_json()
    if method == "POST" and parts == ["internal-routes"]:
        try:
            routes = {int(b): (int(r[0]), int(r[1])) for b, r in (body or {}).items()}
            return 200, {"listening": proxy.add_internal_routes(routes)}
        except (TypeError, ValueError, IndexError) as exc:
            raise _HttpError(400, f"internal routes are {{broker: [listen, upstream]}}: "
                                  f"{exc}") from exc
        except OSError as exc:
            raise _HttpError(409, f"cannot listen: {exc}") from exc
    if method == "POST" and parts == ["reset"]:
        broker = (body or {}).get("broker")
        return 200, {"reset": proxy.reset_connections(None if broker is None else int(broker))}
    raise _HttpError(404, f"no route {method} {path}")


async def handle_http(proxy: Controlled, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
    """Answer one HTTP call on a connection to the control port, then close it."""
    status, payload = 500, {"error": "internal error"}
    try:
        request_line = (await reader.readline()).decode("latin-1").split()
        if len(request_line) < 2:
            raise _HttpError(400, "bad request line")
        method, path = request_line[0].upper(), request_line[1]
        length = 0
        while (line := (await reader.readline()).decode("latin-1").strip()):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length > MAX_BODY:
            raise _HttpError(413, "body too large")
        raw = await reader.readexactly(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError as exc:
            raise _HttpError(400, f"body is not JSON: {exc}") from exc
        status, payload = route(proxy, method, path, body)
    except _HttpError as exc:
        status, payload = exc.status, {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a control call must never kill the proxy
        log.exception("control call failed")
        payload = {"error": f"{type(exc).__name__}: {exc}"}
    data = json.dumps(payload).encode()
    writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    try:
        await writer.drain()
    finally:
        writer.close()


class ProxyClient:
    """The caller's side of the control interface."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 5.0) -> None:
        self.base = f"http://{host}:{port}"
        self.timeout = timeout

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise ProxyControlError(f"{method} {path} -> {exc.code}: {detail}") from exc
        except OSError as exc:
            raise ProxyControlError(f"proxy control {self.base} unreachable: {exc}") from exc

    def status(self) -> dict:
        return self._call("GET", "/status")

    def totals(self) -> dict:
        return self.status()["totals"]

    def drops(self) -> list[dict]:
        return self._call("GET", "/drops")

    def add_rule(self, **rule) -> dict:
        return self._call("POST", "/rules", rule)

    def remove_rule(self, rule_id: int) -> dict:
        return self._call("DELETE", f"/rules/{rule_id}")

    def clear_rules(self) -> list[dict]:
        return self._call("DELETE", "/rules")

    def add_internal_routes(self, routes: dict[int, tuple[int, int]]) -> list[int]:
        """Listen in front of these brokers' replication listeners ({broker: (listen,
        upstream)}); returns the ports newly listened on."""
        body = {str(b): list(r) for b, r in routes.items()}
        return self._call("POST", "/internal-routes", body)["listening"]

    def holds(self, since: int = 0) -> list[dict]:
        """Hold, release and answer events numbered above ``since`` (docs/faults.md)."""
        return self._call("GET", f"/holds?since={int(since)}")

    def reset(self, broker: int | None = None) -> int:
        return self._call("POST", "/reset", {"broker": broker})["reset"]
