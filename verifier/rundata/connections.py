"""The fault proxy's connection log (proxy-connections, docs/faults.md) folded into one
record per client connection, with the process it belongs to and what it was for.

The proxy writes an ``open`` line when a connection's first request names its client, and
a ``close`` line with everything the connection did. A run's copy
(``RUN/connections.jsonl``) may start with closes of connections opened before the run
(skipped: the run never saw them open) and end with connections still open when the run
stopped (kept, open until the end of the log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from verifier.rundata.formats import FORMATS, read_jsonl

#: the log versions this reader folds (1 lacks the per-API counts and the activity)
READABLE_VERSIONS = (1, FORMATS["proxy-connections"])

#: Kafka API keys by name (the ones the tool's clients send)
API_NAMES: dict[int, str] = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
    9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
    13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
    17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics",
    21: "DeleteRecords", 22: "InitProducerId", 24: "AddPartitionsToTxn",
    25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit", 32: "DescribeConfigs",
    36: "SaslAuthenticate", 37: "CreatePartitions", 42: "DeleteGroups", 60: "DescribeCluster",
    61: "DescribeProducers", 65: "DescribeTransactions", 66: "ListTransactions",
    68: "ConsumerGroupHeartbeat", -1: "(unmatched response)",
}  # fmt: skip

#: what a connection was for, by the API keys it carried (first match names it)
PURPOSES: tuple[tuple[str, frozenset[int]], ...] = (
    ("produce", frozenset({0})),
    ("fetch", frozenset({1})),
    ("coordinator", frozenset({8, 9, 11, 12, 13, 14, 22, 24, 25, 26, 28, 68})),
    ("find-coordinator", frozenset({10})),
    ("list-offsets", frozenset({2})),
    ("admin", frozenset({15, 16, 19, 20, 21, 32, 37, 42, 60, 61, 65, 66})),
    ("metadata", frozenset({3})),
)
#: requests every connection may start with; a connection with nothing else is
#: "metadata-only" (it never carried a request after the metadata answer)
HANDSHAKE = frozenset({3, 17, 18, 36, -1})

#: client id prefix (set where the tool builds each client) -> process kind
CLIENT_PREFIX = "verifier."
#: Java client ids of the Spark observer's consumers and admin client
JAVA_OBSERVER = ("consumer-spark-kafka-source-", "spark-kafka-source-", "adminclient-")
#: an application's clients (verifier.rundata.apps.client_prefixes): the presets'
#: ``<run>.app.<name>.<i>.consumer`` (or ``.producer``), Kafka Streams'
#: ``<run>.app.<name>-<process uuid>-StreamThread-1-consumer`` (application.id = group)
APP_CLIENT = re.compile(
    r"^.+?\.app\.(?P<name>[^.]+?)(?:\.(?P<i>\d+)\.(?P<role>[\w-]+)"
    r"|-(?P<uuid>[0-9a-f]{8})[0-9a-f-]{28}-(?P<srole>.+))$")


def process_of(client_id: str | None) -> str:
    """The process a connection belongs to, from its client id.

    The tool names every client it builds ``verifier.<kind>.<name>`` (``verifier.generator
    .idempotent-0``, ``verifier.admin``, ``verifier.reader.read_committed``); the Spark
    observer's Java clients are recognised by Spark's own ids, an application's by
    :data:`APP_CLIENT` (``app/<name>/<instance> consumer``; Streams' instance is its
    process id's first 8 digits); anything else keeps its client id, and a connection that
    never sent a request has none."""
    if not client_id:
        return "(no request)"
    if client_id.startswith(CLIENT_PREFIX):
        kind, _, name = client_id[len(CLIENT_PREFIX):].partition(".")
        return f"{kind} {name}" if name else kind
    if client_id.startswith(JAVA_OBSERVER):
        return "observer"
    app = APP_CLIENT.match(client_id)
    if app:  # a consumer and its producer apart: each client's connections on their own
        if app["i"] is not None:
            return f"app/{app['name']}/{app['i']} {app['role']}"
        return f"app/{app['name']}/{app['uuid']} {app['srole']}"
    return client_id


@dataclass
class Connection:
    """One client connection as the proxy saw it (times in epoch ms)."""

    conn: int
    broker: int
    client_id: str | None
    opened: int
    closed: int | None = None  # None: still open when the log ends
    by: str | None = None  # client, broker, fault (a proxy rule) or proxy
    reason: str | None = None
    requests: int = 0
    responses: int = 0
    #: api key -> (requests, request bytes, response bytes)
    api: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    first_request_t: int | None = None
    first_response_t: int | None = None
    last_t: int | None = None
    activity: list[tuple[int, int]] = field(default_factory=list)

    @property
    def process(self) -> str:
        return process_of(self.client_id)

    @property
    def purpose(self) -> str:
        keys = set(self.api)
        names = [name for name, ks in PURPOSES if keys & ks and name != "metadata"]
        if names:
            return "+".join(names)
        return "metadata" if keys else "none"

    @property
    def metadata_only(self) -> bool:
        """Opened, answered its handshake/metadata, and never carried anything else."""
        return bool(self.api) and set(self.api) <= HANDSHAKE

    @property
    def bytes(self) -> tuple[int, int]:
        """(bytes to the broker, bytes back)."""
        return (sum(v[1] for v in self.api.values()), sum(v[2] for v in self.api.values()))

    def answered_after(self, t: int) -> int | None:
        """The first time at or after ``t`` this connection forwarded a response (to the
        burst resolution of the log), or None."""
        for start, end in self.activity:
            if end >= t:
                return max(start, t)
        if not self.activity and self.first_response_t is not None and self.first_response_t >= t:
            return self.first_response_t
        return None

    def to_json(self) -> dict:
        return {"conn": self.conn, "broker": self.broker, "client_id": self.client_id,
                "process": self.process, "purpose": self.purpose, "opened": self.opened,
                "closed": self.closed, "by": self.by, "reason": self.reason,
                "requests": self.requests, "responses": self.responses,
                "api": {API_NAMES.get(k, str(k)): list(v) for k, v in sorted(self.api.items())},
                "last_t": self.last_t, "activity": [list(a) for a in self.activity]}


@dataclass
class ConnectionLog:
    """A folded log: the connections, and what could not be folded."""

    version: int
    connections: list[Connection]
    end: int | None  # the last time in the log
    closes_without_open: int = 0


def fold(rows: list[dict]) -> tuple[list[Connection], int]:
    """Open and close lines (any order within the log) into connections, by opening
    time; returns them and the number of closes whose open the log lacks."""
    by_id: dict[tuple[int, int], Connection] = {}
    orphans = 0
    for r in rows:
        event = r.get("event")
        key = (r.get("broker"), r.get("conn"))
        if event == "open":
            by_id[key] = Connection(conn=r["conn"], broker=r["broker"],
                                    client_id=r.get("client_id"), opened=r["t"])
        elif event == "close":
            c = by_id.get(key)
            if c is None:
                orphans += 1
                continue
            c.closed, c.by, c.reason = r["t"], r.get("by"), r.get("reason")
            c.client_id = c.client_id or r.get("client_id")
            c.requests, c.responses = r.get("requests", 0), r.get("responses", 0)
            c.api = {int(k): tuple(v) for k, v in (r.get("api") or {}).items()}
            c.first_request_t = r.get("first_request_t")
            c.first_response_t = r.get("first_response_t")
            c.last_t = r.get("last_t")
            c.activity = [tuple(a) for a in r.get("activity") or ()]
    return sorted(by_id.values(), key=lambda c: (c.opened, c.broker, c.conn)), orphans


def read_connections(path: Path | str) -> ConnectionLog:
    """A connection log of a version this tool folds; :class:`RunFormatError` otherwise."""
    head, rows = read_jsonl(Path(path), "proxy-connections", READABLE_VERSIONS)
    version = head.get("version")
    conns, orphans = fold(rows)
    times = [r["t"] for r in rows if isinstance(r.get("t"), int)]
    return ConnectionLog(version=version, connections=conns,
                         end=max(times) if times else None, closes_without_open=orphans)
