"""Holding a copy of the coordinator's WriteTxnMarkers (KAFKA-19446, the known-bugs
profile): the request and its answer as the proxy reads them, the rule that keeps a copy
and releases it into the next transaction of the same producer id and epoch, the gate on
that transaction's producer, and the cluster advertising the proxy on its replication
listener. Hand-built frames (v1 and v2, KIP-1228), no Kafka."""

from __future__ import annotations

import asyncio
import dataclasses
import struct

import pytest

from verifier.harness.cluster.config import ClusterSpec, broker_properties
from verifier.harness.faults.holds import Holds
from verifier.harness.faults.rules import Rule, RuleError, RuleSet
from verifier.harness.kafka_wire import (
    API_END_TXN,
    API_PRODUCE,
    API_WRITE_TXN_MARKERS,
    PartitionWrite,
    RequestIdentity,
    request_identity,
    response_error,
    response_summary,
)
from verifier.orchestration.scenario import parse_scenario
from verifier.rundata.errors import UsageError

TXN = "run.transactional-0"


def _uv(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def _cstr(s: str) -> bytes:
    return _uv(len(s) + 1) + s.encode()


def markers_request(version: int, pid: int, epoch: int, commit: bool,
                    parts: dict[str, list[int]], corr: int = 7) -> bytes:
    """A WriteTxnMarkers request (flexible, v1+) with one marker, as a coordinator sends."""
    head = struct.pack(">hhi", API_WRITE_TXN_MARKERS, version, corr) + struct.pack(">h", 8) + \
        b"broker-1" + b"\x00"
    topics = _uv(len(parts) + 1) + b"".join(
        _cstr(t) + _uv(len(ps) + 1) + b"".join(struct.pack(">i", p) for p in ps) + b"\x00"
        for t, ps in parts.items())
    marker = struct.pack(">qh?", pid, epoch, commit) + topics + struct.pack(">i", 0) + \
        (b"\x02" if version >= 2 else b"") + b"\x00"
    return head + _uv(2) + marker + b"\x00"


def markers_response(pid: int, results: dict[str, list[tuple[int, int]]],
                     corr: int = 7) -> bytes:
    topics = _uv(len(results) + 1) + b"".join(
        _cstr(t) + _uv(len(ps) + 1) + b"".join(struct.pack(">ih", p, e) + b"\x00"
                                               for p, e in ps) + b"\x00"
        for t, ps in results.items())
    return struct.pack(">i", corr) + b"\x00" + _uv(2) + struct.pack(">q", pid) + topics + \
        b"\x00" + b"\x00"


@pytest.mark.parametrize("version", [1, 2])
def test_a_write_txn_markers_request_names_its_producer_epoch_result_and_partitions(version):
    ident = request_identity(markers_request(version, 4001, 7, True, {"t": [0, 2]}))
    assert (ident.api_name, ident.producer_id, ident.producer_epoch, ident.committed) == \
        ("WriteTxnMarkers", 4001, 7, True)
    assert [(p.topic, p.partition) for p in ident.partitions] == [("t", 0), ("t", 2)]
    assert ident.transactional_id is None  # markers carry none
    aborted = request_identity(markers_request(version, 4001, 8, False, {"t": [1]}))
    assert aborted.committed is False


def test_a_write_txn_markers_answer_is_its_first_partition_error():
    ok = response_summary(markers_response(4001, {"t": [(0, 0), (2, 0)]}),
                          API_WRITE_TXN_MARKERS, 1)
    assert ok["error_code"] == 0 and ok["markers"] == [["t", 0, 0], ["t", 2, 0]]
    refused = response_summary(markers_response(4001, {"t": [(0, 0), (2, 47)]}),
                               API_WRITE_TXN_MARKERS, 2)
    assert refused["error_code"] == 47  # INVALID_PRODUCER_EPOCH


def test_a_produce_answer_has_one_error_for_release_on_ok():
    assert response_error({"partitions": [["t", 0, 0, 5], ["t", 1, 0, 9]]}) == 0
    assert response_error({"partitions": [["t", 0, 0, 5], ["t", 1, 51, -1]]}) == 51
    assert response_error({"error_code": 3}) == 3
    assert response_error({}) is None


def _marker(epoch: int, commit: bool = True, partitions=(0,)) -> RequestIdentity:
    return RequestIdentity(API_WRITE_TXN_MARKERS, 1, 1, "broker-2", producer_id=4001,
                           producer_epoch=epoch, committed=commit,
                           partitions=tuple(PartitionWrite("t", p) for p in partitions))


def _produce(epoch: int, partition: int = 0, abort: bool = True,
             pid: int = 4001) -> RequestIdentity:
    return RequestIdentity(API_PRODUCE, 9, 5, "producer", transactional_id=TXN,
                           producer_id=pid, producer_epoch=epoch, acks=-1,
                           partitions=(PartitionWrite("t", partition, producer_id=pid,
                                                      producer_epoch=epoch),),
                           records_abort=abort)


RULE = {"kind": "hold", "api_keys": [27], "committed": True, "partition": 0,
        "client_view": "copy", "limit": 4, "release_after_ms": 5000,
        "release_on": {"api_key": 0, "direction": "response", "transactional_id": TXN,
                       "ok": True, "partition": "same", "producer": "same",
                       "records": "abort"},
        "then_hold": {"api_keys": [0, 26], "max_ms": 10000}}


def test_a_marker_copy_is_held_for_commits_to_its_partition_only():
    rule = Rule.from_json(RULE, 1)
    assert not rule.hold_matches(_marker(8, commit=False))
    assert not rule.hold_matches(_marker(8, partitions=(1, 2)))
    assert rule.hold_matches(_marker(8, partitions=(2, 0)))


def test_the_copy_is_released_by_the_next_transactions_write_of_its_epoch_only():
    rule, held = Rule.from_json(RULE, 1), _marker(8)
    assert rule.releases(held, _produce(8), "response", 0)
    assert not rule.releases(held, _produce(9), "response", 0)  # a later transaction
    assert not rule.releases(held, _produce(8, pid=4002), "response", 0)
    assert not rule.releases(held, _produce(8, partition=1), "response", 0)
    assert not rule.releases(held, _produce(8, abort=False), "response", 0)
    assert not rule.releases(held, _produce(8), "response", 51)  # CONCURRENT_TRANSACTIONS
    without_epoch = RequestIdentity(API_WRITE_TXN_MARKERS, 1, 1, "broker-2")
    assert not rule.releases(without_epoch, _produce(8), "response", 0)


@pytest.mark.parametrize("change, fragment", [
    ({"release_on": {**RULE["release_on"], "producer": "any"}}, "producer"),
    ({"api_keys": [0]}, "committed applies"),
    ({"api_keys": [3], "committed": None}, "then_hold needs"),
])
def test_bad_marker_rules(change, fragment):
    with pytest.raises(RuleError, match=fragment):
        Rule.from_json({**RULE, **change}, 1)


class _Conn:
    """The proxy connection a hold came on, as Holds sees it."""

    def __init__(self, broker: int) -> None:
        import collections

        self.broker, self.id, self.held_open, self.stalled = broker, broker, 0, False
        self.deferred = None
        self.sent: list = []
        self._counters = collections.Counter()

    @property
    def counters(self):
        return self._counters

    def send_released(self, held) -> bool:
        self.sent.append(held)
        return True

    def flush_deferred(self) -> bool:
        self.deferred = None
        return True

    def held_answered(self) -> None:
        self.held_open -= 1

    def reset_client(self, reason: str) -> None:
        pass


def test_the_released_copy_gates_the_producer_of_its_releasing_write():
    async def run():
        rules = RuleSet()
        rule = rules.add(RULE)
        holds = Holds(rules, lambda b: ("127.0.0.1", 1), [1, 2, 3])
        inter_broker, producer = _Conn(1), _Conn(2)
        holds.attribute(_produce(7))  # the producer's own requests name its id's txn
        held = holds.hold(rule, inter_broker, b"copy", holds.attribute(_marker(8)))
        holds.passed(_produce(8, abort=False), "response", b"")  # N+1 commits: not it
        assert not held.released and rule.gate_txn is None
        ok = struct.pack(">i", 5) + b"\x00" + _uv(2) + _cstr("t") + _uv(2) + \
            struct.pack(">ihqqq", 0, 0, 10, -1, 0) + _uv(1) + _uv(0) + b"\x00" + b"\x00" + \
            struct.pack(">i", 0) + b"\x00"
        holds.passed(_produce(8), "response", ok)
        assert held.released and inter_broker.sent == [held]
        assert rule.gate_txn == TXN
        # the copy counts for its transactional id's column (exposure), once answered
        (tally,) = rule.to_json()["holds"]
        assert (tally["client_id"], tally["transactional_id"]) == ("broker-2", TXN)
        assert (tally["held"], tally["on_event"], tally["awaiting"]) == (1, 1, 1)
        assert rules.hold_for(1, _marker(9)) is None  # it happened: no further copies
        end = RequestIdentity(API_END_TXN, 4, 6, "producer", transactional_id=TXN)
        assert rules.gate_for(2, end) is rule
        holds.gate(rule, producer, b"endtxn", end, None)
        holds.answered(held, markers_response(4001, {"t": [(0, 0)]}), to_client=False)
        assert rules.gate_for(2, end) is None and producer.deferred is None
        (tally,) = rule.to_json()["holds"]
        assert (tally["answered"], tally["awaiting"], tally["errors"]) == (1, 0, {"0": 1})
        events = [e["event"] for e in holds.events]
        assert events == ["hold", "release", "hold", "answer", "release"]
        holds.close()

    asyncio.run(run())


def test_the_cluster_advertises_the_proxy_on_replication_only_when_asked():
    spec = ClusterSpec(nodes=3, base_port=28000)
    props = broker_properties(spec, 2, "/d")
    assert "INTERNAL://127.0.0.1:28102" in props["advertised.listeners"]
    assert props["listeners"].count("28102") == 1
    proxied = ClusterSpec(nodes=3, base_port=28000, replication_proxied=True)
    props = broker_properties(proxied, 2, "/d")
    assert "INTERNAL://127.0.0.1:28312" in props["advertised.listeners"]
    assert "INTERNAL://127.0.0.1:28102" in props["listeners"]  # it still binds its own
    assert ClusterSpec.from_json(proxied.to_json()) == proxied
    assert "replication_proxied" not in spec.to_json()


def test_a_scenario_asks_for_replication_through_the_proxy():
    on = parse_scenario("[options]\nproxy_replication = true\n", "x")
    assert on.proxy_replication and on.to_json()["proxy_replication"] is True
    off = parse_scenario("", "y")
    assert not off.proxy_replication and "proxy_replication" not in off.to_json()
    with pytest.raises(UsageError, match="proxy_replication"):
        parse_scenario("[options]\nproxy_replication = 1\n", "z")


def test_the_proxy_routes_a_replication_listener_to_the_brokers_own(tmp_path):
    """An internal route, opened when asked (not at the start: test clusters 4 ports
    apart would share the ports): a connection to its port reaches the broker's
    replication listener (not its client one), and the connection log says so."""
    import json
    import socket
    from pathlib import Path

    from verifier.harness.faults.proxy import Proxy

    def free() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    async def run(log: Path) -> list[str]:
        reached: list[str] = []

        def stand_in(name):
            async def serve(reader, writer):
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                corr = struct.unpack_from(">i", await reader.readexactly(size), 4)[0]
                reached.append(name)
                writer.write(struct.pack(">ii", 4, corr))
                await writer.drain()
                writer.close()
            return serve

        ports = {k: free() for k in ("client", "internal", "listen", "listen_internal")}
        servers = [await asyncio.start_server(stand_in(k), "127.0.0.1", ports[k])
                   for k in ("client", "internal")]
        proxy = Proxy({1: (ports["listen"], ports["client"])}, conn_log=log)
        await proxy.start()
        assert "internal" not in proxy.status()["brokers"]["1"]
        route = {1: (ports["listen_internal"], ports["internal"])}
        assert proxy.add_internal_routes(route) == [ports["listen_internal"]]
        assert proxy.add_internal_routes(route) == []  # already open
        await asyncio.sleep(0.05)
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        with pytest.raises(OSError):
            proxy.add_internal_routes({2: (taken.getsockname()[1], 1)})
        taken.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", ports["listen_internal"])
        body = markers_request(1, 4001, 7, True, {"t": [0]}, corr=42)
        writer.write(struct.pack(">i", len(body)) + body)
        await writer.drain()
        answer = await reader.readexactly(8)
        assert struct.unpack(">ii", answer) == (4, 42)
        writer.close()
        assert proxy.status()["brokers"]["1"]["internal"] == [ports["listen_internal"],
                                                              ports["internal"]]
        await asyncio.sleep(0.1)
        await proxy.close()
        for s in servers:
            s.close()
        return reached

    log = tmp_path / "connections.jsonl"
    assert asyncio.run(run(log)) == ["internal"]
    records = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert records and all(r.get("listener") == "internal" for r in records)


def test_a_marker_is_named_after_the_transactional_id_of_its_producer():
    """The proxy learns each producer id's transactional id from the producer's own
    requests and names it on the coordinator's markers: with several producers side by
    side, a hold for one transactional id copies only its own markers."""
    holds = Holds(RuleSet(), lambda b: ("127.0.0.1", 1), [1])
    assert holds.attribute(_marker(8)).transactional_id is None  # not seen yet
    holds.attribute(_produce(8))  # run.transactional-0 writes as producer 4001
    other = RequestIdentity(API_END_TXN, 4, 6, "other", transactional_id="run.other-0",
                            producer_id=4002, producer_epoch=3, committed=True)
    holds.attribute(other)
    mine = holds.attribute(_marker(9))
    theirs = holds.attribute(dataclasses.replace(_marker(4), producer_id=4002))
    assert (mine.transactional_id, theirs.transactional_id) == (TXN, "run.other-0")
    rule = Rule.from_json({**RULE, "transactional_id": TXN,
                           "release_on": {**RULE["release_on"], "transactional_id": "same"}}, 1)
    assert rule.hold_matches(mine) and not rule.hold_matches(theirs)
    assert rule.releases(mine, _produce(9), "response", 0)
    holds.close()


def test_the_proxy_names_the_markers_it_reads():
    from verifier.harness.faults.proxy import Proxy

    proxy = Proxy({1: (0, 0)})
    end_txn = struct.pack(">hhi", API_END_TXN, 3, 9) + struct.pack(">h", 8) + b"producer" + \
        b"\x00" + _cstr(TXN) + struct.pack(">qh?", 4001, 8, True) + b"\x00"
    assert proxy.identify(None, end_txn).transactional_id == TXN
    marker = proxy.identify(None, markers_request(2, 4001, 9, True, {"t": [0]}))
    assert marker.transactional_id == TXN
    proxy.holds.close()
