"""The consumer's connections against seed 003's claims (verifier.judge.consumer_connections):
the Java consumer as the text describes it, and one case per claim that does not hold."""

from __future__ import annotations

from dataclasses import replace

from verifier.judge.consumer_connections import CLAIMS, ConsumerFacts, check, render
from verifier.rundata.connections import Connection

T0 = 1_800_000_000_000
FACTS = ConsumerFacts(constructed=T0, first_poll=T0 + 3000, closing=T0 + 20_000,
                      coordinator=2, leaders=frozenset({1, 2, 3}))
META = {18: (1, 40, 400), 3: (2, 60, 300)}
GROUP = {11: (2, 1, 1), 14: (1, 1, 1), 12: (9, 1, 1), 9: (1, 1, 1), 8: (1, 1, 1)}


def _c(conn, broker, opened, closed, api, by="client"):
    return Connection(conn=conn, broker=broker, client_id="c", opened=opened, closed=closed,
                      by=by, api=dict(api))


def _text() -> list[Connection]:
    """Seed 003's log: the bootstrap connection (node -1) fetches the metadata and finds
    the coordinator, one to the coordinator (node 2), one fetching connection per leader
    (1, 2, 3); the bootstrap one closed once those exist."""
    return [
        _c(1, 1, T0 + 3010, T0 + 4000, {**META, 10: (1, 30, 40)}),
        _c(2, 2, T0 + 3050, T0 + 20_100, {**META, **GROUP}),
        _c(3, 1, T0 + 3200, T0 + 20_100, {**META, 1: (40, 1, 1), 2: (1, 1, 1)}),
        _c(4, 2, T0 + 3200, T0 + 20_100, {**META, 1: (40, 1, 1)}),
        _c(5, 3, T0 + 3210, T0 + 20_100, {**META, 1: (40, 1, 1)}),
    ]


def _holds(conns, facts=FACTS) -> dict[str, bool]:
    return {f["claim"]: f["holds"] for f in check(conns, facts)}


def test_the_texts_consumer_holds_every_claim():
    assert _holds(_text()) == dict.fromkeys(CLAIMS, True)
    shown = render("java", check(_text(), FACTS))
    assert "differs" not in shown and shown.count("holds") == len(CLAIMS)


def test_a_connection_at_construction_differs():
    conns = [_c(9, 3, T0 + 50, T0 + 900, META), *_text()]
    got = _holds(conns)
    assert not got["none-at-construction"]
    assert not got["find-coordinator-first"]  # the first connection was not the poll's
    assert got["one-per-leader"] and got["one-coordinator-connection"]


def test_find_coordinator_before_the_first_poll_differs():
    """librdkafka's group starts at construction: its first connection finds the
    coordinator, but before any poll."""
    conns = _text()
    for c in conns:
        c.opened -= 3000
    got = _holds(conns)
    assert not got["find-coordinator-first"] and not got["none-at-construction"]


def test_find_coordinator_not_on_the_first_connection_differs():
    conns = _text()
    conns[0].api = dict(META)
    conns[1].api = {**META, 10: (1, 30, 40), **GROUP}
    assert not _holds(conns)["find-coordinator-first"]


def test_group_requests_sharing_a_fetching_connection_differ():
    conns = _text()
    conns[1].api = {**META, **GROUP, 1: (40, 1, 1)}  # kafka-python's one socket per node
    del conns[3]
    got = _holds(conns)
    assert not got["one-coordinator-connection"] and got["one-per-leader"]


def test_group_requests_to_another_broker_or_on_two_connections_differ():
    assert not _holds(_text(), replace(FACTS, coordinator=3))["one-coordinator-connection"]
    conns = [*_text(), _c(6, 2, T0 + 5000, T0 + 20_100, {**META, 12: (3, 1, 1)})]
    assert not _holds(conns)["one-coordinator-connection"]


def test_fetching_connections_not_one_per_leader_differ():
    assert not _holds(_text(), replace(FACTS, leaders=frozenset({1, 2})))["one-per-leader"]
    conns = [*_text(), _c(6, 3, T0 + 5000, T0 + 20_100, {**META, 1: (3, 1, 1)})]
    assert not _holds(conns)["one-per-leader"]


def test_a_bootstrap_connection_kept_or_closed_by_the_broker_differs():
    conns = _text()
    conns[0].closed = T0 + 20_100  # closed with the consumer
    assert not _holds(conns)["bootstrap-closed"]
    conns[0].closed, conns[0].by = T0 + 4000, "broker"
    assert not _holds(conns)["bootstrap-closed"]


def test_a_fetching_connection_closed_early_differs():
    conns = _text()
    conns[4].closed = T0 + 9000
    got = _holds(conns)
    assert not got["kept-until-close"] and got["one-per-leader"]
    assert "1 of 4 closed" in next(f["measured"] for f in check(conns, FACTS)
                                   if f["claim"] == "kept-until-close")
