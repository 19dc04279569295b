"""The connection report: folding the proxy's log, the leak/storm/no-reconnect checks,
the terminal summary and the lanes, on logs shaped like the proxy writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifier.judge.connections import check_leak, check_storm, summarize, thresholds
from verifier.report.connections import lanes_svg, render_connections
from verifier.rundata.connections import fold, process_of, read_connections
from verifier.rundata.formats import RunFormatError

FIXTURES = Path(__file__).parent / "fixtures"
T0 = 1_800_000_000_000


def _conn(conn, broker, client, opened, closed, by="client", api=None, activity=None,
          last=None):
    api = api if api is not None else {"18": [1, 40, 400], "3": [1, 60, 300]}
    act = activity if activity is not None else [[opened + 5, opened + 10]]
    return [
        {"event": "open", "conn": conn, "broker": broker, "peer": "127.0.0.1:1",
         "client_id": client, "t": opened},
        {"event": "close", "conn": conn, "broker": broker, "peer": "127.0.0.1:1",
         "client_id": client, "t": closed, "reason": f"{by} closed", "by": by,
         "requests": sum(v[0] for v in api.values()), "responses": 2, "api": api,
         "first_request_t": opened + 1, "first_response_t": opened + 5,
         "last_t": last if last is not None else act[-1][1] if act else opened,
         "activity": act},
    ]


def _write(path: Path, rows: list[dict], version: int = 2) -> Path:
    head = {"type": "header", "format": "proxy-connections", "version": version}
    path.write_text("\n".join(json.dumps(r) for r in [head, *rows]) + "\n")
    return path


def test_process_from_client_id():
    assert process_of("verifier.generator.idempotent-0") == "generator idempotent-0"
    assert process_of("verifier.admin") == "admin"
    assert process_of("consumer-spark-kafka-source-1a2b-executor-1") == "observer"
    assert process_of("adminclient-3") == "observer"
    assert process_of("kafka-python-producer-1") == "kafka-python-producer-1"
    assert process_of(None) == "(no request)"


def test_an_applications_clients_are_its_instances_processes():
    """The presets' consumer and producer of one instance apart; Streams' by its process
    id; a run id with dots and a name with dashes kept whole (issue 47)."""
    run = "instance-kill-20261129T1842.s1"
    assert process_of(f"{run}.app.copier-commit-after.0.consumer") == \
        "app/copier-commit-after/0 consumer"
    assert process_of(f"{run}.app.java-copier-transactional.1.producer") == \
        "app/java-copier-transactional/1 producer"
    streams = f"{run}.app.streams-eos-3f2a1b4c-1234-5678-9abc-def012345678-StreamThread-1-"
    assert process_of(streams + "consumer") == "app/streams-eos/3f2a1b4c StreamThread-1-consumer"
    assert process_of(streams + "producer") == "app/streams-eos/3f2a1b4c StreamThread-1-producer"
    assert process_of("myapp.consumer-1") == "myapp.consumer-1"  # a user's own: its id


def test_fold_pairs_opens_and_closes_and_names_purposes():
    rows = (_conn(1, 1, "verifier.generator.a-0", T0, T0 + 9000)
            + _conn(2, 2, "verifier.generator.a-0", T0 + 100, T0 + 9000,
                    api={"18": [1, 40, 400], "0": [50, 50_000, 2_500]})
            + [{"event": "close", "conn": 99, "broker": 1, "t": T0, "by": "client"}])
    conns, orphans = fold(rows)
    assert orphans == 1  # a close of a connection opened before the run
    assert [c.purpose for c in conns] == ["metadata", "produce"]
    assert conns[0].metadata_only and not conns[1].metadata_only
    assert conns[1].bytes == (50_040, 2_900)


def test_reads_version_1_and_rejects_unknown(tmp_path):
    rows = [{"event": "open", "conn": 1, "broker": 1, "client_id": "x", "t": T0},
            {"event": "close", "conn": 1, "broker": 1, "client_id": "x", "t": T0 + 5,
             "by": "client", "requests": 3, "responses": 3}]
    log = read_connections(_write(tmp_path / "v1.jsonl", rows, version=1))
    assert log.version == 1 and log.connections[0].requests == 3
    with pytest.raises(RunFormatError, match="version"):
        read_connections(_write(tmp_path / "v9.jsonl", rows, version=9))


def test_idle_close_and_reopen_are_counted():
    # a producer: bootstrap metadata connection, a produce connection closed after 3 s of
    # silence (idle), the next send re-opens it; the process exits at the end
    gen = "verifier.generator.at-least-once-0"
    rows = (_conn(1, 1, gen, T0, T0 + 3600, last=T0 + 500)
            + _conn(2, 2, gen, T0 + 200, T0 + 6000, activity=[[T0 + 250, T0 + 3000]],
                    api={"0": [30, 3000, 600]})
            + _conn(3, 2, gen, T0 + 12_000, T0 + 20_000,
                    activity=[[T0 + 12_010, T0 + 19_990]], api={"0": [30, 3000, 600]}))
    conns, _ = fold(rows)
    from verifier.rundata.connections import ConnectionLog

    section = summarize(ConnectionLog(2, conns, T0 + 20_000), [])
    p = section["processes"]["generator at-least-once-0"]
    assert (p["opened"], p["at_start"], p["later"]) == (3, 2, 1)
    assert p["idle_closes"] == 2 and p["idle_before_close_ms"] == 3050
    assert p["metadata_only"] == 1
    text = render_connections(section)
    assert "3 opened (2 at start-up, 1 later)" in text and "2 idle closes" in text


def test_leak_is_a_rising_low_water_mark():
    leaky = []
    for i in range(24):  # one more connection every second, none closed
        leaky += _conn(i + 1, 1, "verifier.generator.leaky-0", T0 + i * 1000, None)[:1]
    steady = []
    for i in range(24):  # opened and closed again: no growth
        steady += _conn(100 + i, 1, "verifier.generator.steady-0", T0 + i * 1000,
                        T0 + i * 1000 + 500)
    conns, _ = fold(leaky + steady)
    found = check_leak(conns, T0 + 24_000, growth=10)
    assert [f["subject"] for f in found] == ["generator leaky-0"]
    assert check_leak(conns, T0 + 24_000, growth=30) == []


def test_storm_counts_opens_per_second_per_broker():
    rows = []
    for i in range(40):  # 40 opens to broker 3 within 800 ms
        rows += _conn(i + 1, 3, "verifier.generator.x-0", T0 + i * 20, T0 + i * 20 + 10)
    rows += _conn(50, 1, "verifier.admin", T0, T0 + 100)
    conns, _ = fold(rows)
    found = check_storm(conns, per_s=30)
    assert len(found) == 1 and found[0]["subject"] == "broker 3"
    assert found[0]["detail"].startswith("40 opens within one second")
    assert check_storm(conns, per_s=40) == []


def test_reconnect_after_heal_and_the_no_reconnect_finding():
    gen, obs = "verifier.generator.idempotent-0", "consumer-spark-kafka-source-1-executor-1"
    fault = {"id": 1, "fault": "broker-kill", "target": {"node": 2},
             "start": T0 + 10_000, "end": T0 + 20_000}
    rows = (_conn(1, 2, gen, T0, T0 + 10_050, by="broker", activity=[[T0, T0 + 10_000]],
                  api={"0": [100, 10_000, 1_000]})
            + _conn(2, 1, gen, T0 + 10_200, T0 + 60_000, activity=[[T0 + 21_500, T0 + 59_000]],
                    api={"0": [100, 10_000, 1_000]})
            # the observer stays connected through the fault and never gets an answer again
            + _conn(3, 1, obs, T0, T0 + 60_000, activity=[[T0, T0 + 9_900]],
                    api={"1": [100, 10_000, 1_000]}))
    conns, _ = fold(rows)
    from verifier.rundata.connections import ConnectionLog

    section = summarize(ConnectionLog(2, conns, T0 + 60_000), [fault],
                        {"reconnect_within_s": 30, "fail_on": ["no-reconnect"]})
    procs = section["faults"][0]["processes"]
    # its connection died with the broker at +10 s, the next answer came at +21.5 s,
    # 1.5 s after the heal
    assert procs["generator idempotent-0"] == {"reconnects": 1, "closed_in_fault": 1,
                                               "recovery_s": 1.5, "silence_s": 11.5}
    assert procs["observer"]["recovery_s"] is None
    assert [(f["check"], f["subject"], f["expectation"]) for f in section["findings"]] == [
        ("no-reconnect", "observer", "forbidden")]
    assert section["failed"]
    text = render_connections(section)
    assert "x no-reconnect observer" in text
    rows = [line.split() for line in text.splitlines() if "fault" not in line]
    assert ["generator", "idempotent-0", "1", "1", "11.5", "s", "1.5", "s"] in rows, text
    assert ["observer", "0", "0", "-", "none"] in rows, text
    svg = lanes_svg(section, [fault])
    assert svg.count("<svg") == 1 and "generator idempotent-0 → b2" in svg
    assert "broker-kill" in svg

    # junit.xml: the forbidden finding fails the scenario's connections case; the same
    # finding only tolerated is in the case's output and the case passes
    import xml.etree.ElementTree as ET

    from verifier.report.junit import render_junit

    doc = {"scenario": "broker-kill", "run": "r", "sink": "exactly-once", "columns": [],
           "connections": section}
    case = ET.fromstring(render_junit([doc])).find("./testsuite/testcase[@name='connections']")
    failure = case.find("failure")
    assert failure is not None and "no-reconnect" in failure.get("message")
    assert "no-reconnect observer" in failure.text
    tolerated = summarize(ConnectionLog(2, conns, T0 + 60_000), [fault],
                          {"reconnect_within_s": 30})
    suite = ET.fromstring(render_junit([{**doc, "connections": tolerated}])).find("testsuite")
    case = suite.find("testcase[@name='connections']")
    assert case.find("failure") is None and suite.get("failures") == "0"
    assert "tolerated: no-reconnect observer" in case.find("system-out").text


def test_thresholds_are_checked():
    assert thresholds(None)["storm_opens_per_s"] == 30
    with pytest.raises(ValueError, match="unknown keys"):
        thresholds({"storm": 3})
    with pytest.raises(ValueError, match="fail_on"):
        thresholds({"fail_on": ["leaks"]})


def test_captured_log_of_a_real_producer(tmp_path):
    """A log the proxy wrote for a kafka-python producer with connections_max_idle_ms=3000
    (tests/integration/harness/test_connection_lifecycle.py): no finding, idle closes."""
    log = read_connections(FIXTURES / "connections-idle-producer.jsonl")
    section = summarize(log, [])
    assert section["findings"] == []
    procs = section["processes"]
    assert any(p["idle_closes"] for p in procs.values())
