"""The fault proxy's connection log (docs/faults.md): JSON lines, one ``open`` and one
``close`` record per connection, the close record saying what the connection did
(:class:`Traffic`). verifier.rundata.connections reads it back."""

from __future__ import annotations

import json
from pathlib import Path

from verifier.harness.faults.holds import now_ms
from verifier.rundata.formats import header

#: responses less than this apart belong to one activity burst of a connection
BURST_GAP_MS = 1000
#: bursts kept per connection; beyond, the last one is extended (bounds the close record)
MAX_BURSTS = 500


class ConnectionLog:
    """The log file, for the proxy's lifetime. Started afresh with its header at each
    start: connection numbers count from 1 again, so a log continued across proxies would
    pair one proxy's open with another's close (and keep an older version's header over
    this version's lines)."""

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


class Traffic:
    """What one connection did: requests and bytes per API key, its first request and
    response, its last frame, and its bursts of answered traffic."""

    def __init__(self) -> None:
        self.requests = self.responses = 0
        #: api key -> [requests, request bytes, response bytes] (key -1: unmatched response)
        self.api: dict[int, list[int]] = {}
        self.first_request_t: int | None = None
        self.first_response_t: int | None = None
        self.last_t: int | None = None  # the last frame in either direction
        #: [start, end] ms of answered traffic, responses closer than BURST_GAP_MS merged
        self.bursts: list[list[int]] = []

    def request(self, api_key: int, size: int) -> None:
        """A request frame of ``size`` bytes (size prefix included) came."""
        t = now_ms()
        if self.first_request_t is None:
            self.first_request_t = t
        self.last_t = t
        entry = self.api.setdefault(api_key, [0, 0, 0])
        entry[0] += 1
        entry[1] += size
        self.requests += 1

    def response(self, api_key: int | None, size: int) -> None:
        """A response frame came (``api_key`` None: it answers no request known)."""
        t = now_ms()
        if self.first_response_t is None:
            self.first_response_t = t
        self.last_t = t
        self.api.setdefault(-1 if api_key is None else api_key, [0, 0, 0])[2] += size
        self.responses += 1
        if self.bursts and t - self.bursts[-1][1] < BURST_GAP_MS:
            self.bursts[-1][1] = t
        elif len(self.bursts) >= MAX_BURSTS:
            self.bursts[-1][1] = t
        else:
            self.bursts.append([t, t])

    def to_json(self) -> dict:
        """The close record's account of the connection."""
        return {"requests": self.requests, "responses": self.responses,
                "api": {str(k): v for k, v in sorted(self.api.items())},
                "first_request_t": self.first_request_t,
                "first_response_t": self.first_response_t, "last_t": self.last_t,
                "activity": self.bursts}
