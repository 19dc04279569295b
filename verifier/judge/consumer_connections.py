"""What one consumer in a group did with its TCP connections, against the claims of the
project's source text on it (seed 003: Hu Xi's column "Kafka核心技术与实战", the lecture on
how the Java consumer manages TCP connections, the sister of lecture 13 on the producer's;
docs/connections.md).

The text's claims, each checked from the fault proxy's connection log of one client id
(:class:`verifier.rundata.connections.Connection`) and four facts the caller measured
(when the consumer was built, when it first polled, when it was closed; the group's
coordinator and the leaders of the partitions it fetched):

- ``none-at-construction``: ``new KafkaConsumer(props)`` opens no connection (unlike the
  producer, whose Sender thread connects at once);
- ``find-coordinator-first``: the consumer's first connection, opened at the first poll,
  carries the FindCoordinator request (to the least loaded broker; it also fetches the
  metadata);
- ``one-coordinator-connection``: one connection to the coordinator the FindCoordinator
  answer names carries the group's requests (join, sync, heartbeat, offsets), and no
  fetch: the Java client registers it under a node id of its own (Integer.MAX_VALUE
  minus the coordinator's id) so that group and fetch requests never share a socket;
- ``one-per-leader``: one fetching connection per broker that leads a partition it reads
  (5 partitions on 4 brokers: 4 connections);
- ``bootstrap-closed``: the first connection is closed by the client once the fetching
  connections exist (the metadata is then fetched over them), long before the consumer's
  own close; a consumer that runs a while keeps only the other two kinds;
- ``kept-until-close``: those two kinds live as long as the consumer polls (its requests
  keep them busy, so the idle close never hits them): each is closed at its close.

Pure: connections and facts in, one finding per claim out. A claim that does not hold is
a finding about the client (what it does differs from the text), never a failure of the
run.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.rundata.connections import Connection

FETCH, FIND_COORDINATOR = 1, 10
#: the requests of group membership and offsets a coordinator connection carries:
#: OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup, SyncGroup,
#: ConsumerGroupHeartbeat (KIP-848)
GROUP_APIS = frozenset({8, 9, 11, 12, 13, 14, 68})
#: a connection closed this soon before the consumer's close counts as closed by it
CLOSE_SLACK_MS = 1000

#: claim id -> what seed 003 says, in the report's words
CLAIMS: dict[str, str] = {
    "none-at-construction": "no connection when the consumer is constructed",
    "find-coordinator-first": "the first connection, at the first poll, sends FindCoordinator",
    "one-coordinator-connection": "one connection to the coordinator carries the group's "
                                  "requests, none of the fetches",
    "one-per-leader": "one fetching connection per partition leader",
    "bootstrap-closed": "the first connection closed by the client once the metadata is "
                        "known, before the consumer's close",
    "kept-until-close": "the coordinator and fetching connections kept until the "
                        "consumer's close",
}


@dataclass(frozen=True)
class ConsumerFacts:
    """What the caller measured beside the log (times in epoch ms)."""

    constructed: int  # just before the constructor
    first_poll: int  # just before subscribe and the first poll
    closing: int  # just before close()
    coordinator: int  # the group coordinator's node id
    leaders: frozenset[int]  # the nodes leading the partitions it fetched


def _show(c: Connection, t0: int) -> str:
    closed = "open" if c.closed is None else f"closed +{c.closed - t0} ms by {c.by}"
    return f"#{c.conn} broker {c.broker} +{c.opened - t0} ms {closed} [{c.purpose}]"


def check(conns: list[Connection], facts: ConsumerFacts) -> list[dict]:
    """One finding per claim (:data:`CLAIMS`, in order): ``{"claim", "text", "holds",
    "measured"}``; ``conns`` are one client id's connections, closed ones (what a
    connection carried is known at its close)."""
    conns = sorted(conns, key=lambda c: (c.opened, c.conn))
    t0 = facts.constructed
    out: dict[str, tuple[bool, str]] = {}
    early = [c for c in conns if c.opened < facts.first_poll]
    out["none-at-construction"] = (not early, f"{len(early)} opened before the first poll"
                                   + "".join(f"; {_show(c, t0)}" for c in early))
    # the consumer's first connection, opened at the first poll, carries FindCoordinator
    # (a client that connected at construction already differs here: its first
    # connection was not the poll's)
    first = conns[0] if conns else None
    finders = [c for c in conns if FIND_COORDINATOR in c.api]
    out["find-coordinator-first"] = (
        first is not None and first.opened >= facts.first_poll
        and FIND_COORDINATOR in first.api,
        f"first poll at +{facts.first_poll - t0} ms; FindCoordinator on {len(finders)} "
        "connection(s): "
        + ", ".join(f"{'the first' if c is first else _show(c, t0)}" for c in finders)
        if finders else "no FindCoordinator")
    group = [c for c in conns if set(c.api) & GROUP_APIS]
    out["one-coordinator-connection"] = (
        len(group) == 1 and group[0].broker == facts.coordinator and FETCH not in group[0].api,
        f"coordinator node {facts.coordinator}; group requests on {len(group)}: "
        + ", ".join(_show(c, t0) + (" with fetches" if FETCH in c.api else "") for c in group))
    fetching = [c for c in conns if FETCH in c.api]
    brokers = sorted(c.broker for c in fetching)
    out["one-per-leader"] = (
        brokers == sorted(facts.leaders),
        f"leaders {sorted(facts.leaders)}; fetching connections to brokers {brokers}")
    base = conns[0] if conns else None
    before_close = facts.closing - CLOSE_SLACK_MS
    out["bootstrap-closed"] = (
        base is not None and base.by == "client" and base.closed is not None
        and base.closed < before_close and not set(base.api) & (GROUP_APIS | {FETCH}),
        f"the first: {_show(base, t0)}" if base else "no connection")
    kept = list({c.conn: c for c in group + fetching}.values())
    dropped = [c for c in kept if c.closed is not None and c.closed < before_close]
    out["kept-until-close"] = (bool(kept) and not dropped,
                               f"{len(dropped)} of {len(kept)} closed before the close"
                               + "".join(f"; {_show(c, t0)}" for c in dropped))
    return [{"claim": k, "text": CLAIMS[k], "holds": out[k][0], "measured": out[k][1]}
            for k in CLAIMS]


def render(client: str, findings: list[dict]) -> str:
    """The findings as the connection report's lines: a claim that does not hold is a
    finding about the client, marked ``differs``."""
    lines = [f"consumer connections of {client}, against seed 003's claims:"]
    for f in findings:
        mark = "holds  " if f["holds"] else "differs"
        lines.append(f"  {mark} {f['claim']}: {f['text']}\n          {f['measured']}")
    return "\n".join(lines)
