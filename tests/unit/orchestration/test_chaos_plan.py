"""Pure parts of the chaos orchestrator: the user's mode, fault target substitution."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from verifier.api import derive_mode
from verifier.orchestration.planning import RunOptions, _substitute, plan_producers
from verifier.orchestration.scenario import parse_scenario
from verifier.rundata.errors import VerifierError


@pytest.mark.parametrize(
    "settings, mode",
    [
        ({"transactional_id": "x"}, "transactional"),
        ({"enable_idempotence": True}, "idempotent"),
        ({}, "idempotent"),  # kafka-python 3 default
        # kafka-python retries by default: acks=1 claims at-least-once (at-most-once
        # refuses retries; a leader crash's losses fail the column, as the advice says)
        ({"acks": 1}, "at-least-once"),
        ({"acks": 1, "retries": 0}, "at-most-once"),
        ({"enable_idempotence": False, "acks": -1, "retries": 5}, "at-least-once"),
        ({"enable_idempotence": False, "acks": -1, "retries": 0}, "at-most-once"),
        ({"acks": -1, "max_in_flight_requests_per_connection": 6}, "at-least-once"),
    ],
)
def test_derive_mode(settings, mode):
    assert derive_mode(settings) == mode


def test_derive_mode_on_librdkafka_defaults():
    # librdkafka's idempotence is off by default (verifier advise: librdkafka-defaults)
    assert derive_mode({}, "librdkafka") == "at-least-once"
    assert derive_mode({"enable_idempotence": True}, "librdkafka") == "idempotent"


def test_plans_and_substitution():
    s = parse_scenario("[workload]\nmodes = ['idempotent', 'transactional']", "x")
    plans = plan_producers(s, "r1", RunOptions(out=Path("o"), user_config=Path("my.properties"),
                                               user_mode="at-least-once"))
    assert [(p.pid, p.mode, p.expect) for p in plans] == [
        ("idempotent-0", "idempotent", "idempotent"),
        ("transactional-0", "transactional", "transactional"),
        ("user-0", "user:my.properties", "at-least-once"),
    ]
    target = {"leader": {"topic": "@idempotent", "partition": 0}}
    assert _substitute(target, plans, "r1") == {"leader": {"topic": "r1.idempotent",
                                                           "partition": 0}}
    with pytest.raises(VerifierError, match="no producer of mode"):
        _substitute({"leader": {"topic": "@at-most-once"}}, plans, "r1")


def test_fault_summary_says_what_fired(tmp_path):
    from verifier.report.faults import fault_summary

    (tmp_path / "nemesis.jsonl").write_text("\n".join([
        '{"type":"header","format":"nemesis-history","version":1,"run":"r","seed":1}',
        '{"type":"invoke","f":"start","fault":"ack-loss","target":{"all":true},"id":1,"t":1}',
        '{"type":"ok","f":"start","fault":"ack-loss","target":{"all":true},"id":1,"t":2,'
        '"detail":{"node":null}}',
        '{"type":"ok","f":"heal","fault":"ack-loss","target":{"all":true},"id":1,"t":3,'
        '"detail":{"rule":1,"matched":100,"hits":7}}',
        '{"type":"fail","f":"start","fault":"broker-kill","target":{"node":2},"id":2,"t":4,'
        '"error":"node 2 is dead, not running"}',
        '{"type":"ok","f":"heal","fault":"all","target":{},"id":0,"t":5}',
    ]) + "\n")
    lines = fault_summary(tmp_path)
    assert lines[0] == "ack-loss on every broker: fired, 7 of 100 responses hit"
    assert lines[1].startswith("broker-kill on broker 2: did not fire (fail: node 2 is dead")
    assert len(lines) == 2


def test_fault_targets_read_as_words():
    from verifier.report.faults import target_text

    assert target_text({"coordinator": {"transactional_id": "t-1"}}) == (
        "the coordinator of transactional id t-1")
    assert target_text({"leader": {"topic": "x", "partition": 0}}) == (
        "the leader of topic x, partition 0")
    assert target_text(3) == "broker 3" and target_text("observer") == "observer"


def test_fault_summary_shows_the_killed_producers_epoch_bump(tmp_path):
    from verifier.report.faults import fault_summary
    from verifier.rundata.plan import PlannedProducer, RunPlan

    RunPlan(run="r", scenario="s", seed=1, sink="exactly-once", bootstrap_servers="b:1",
            producers={pid: PlannedProducer(pid, mode, mode, f"r.{mode}")
                       for pid, mode in (("transactional-0", "transactional"),
                                         ("idempotent-0", "idempotent"))}
            ).write(tmp_path / "config.json")
    (tmp_path / "histories").mkdir()
    (tmp_path / "histories" / "transactional-0.jsonl").write_text("\n".join([
        '{"type":"header","format":"producer-history","version":1}',
        '{"type":"session","ses":1,"t":1}',
        '{"type":"producer-id","ses":1,"producer_id":3,"epoch":0,"t":2}',
        '{"type":"session","ses":2,"t":5}',
        '{"type":"producer-id","ses":2,"producer_id":3,"epoch":2,"t":6}',
        '{"type":"ok","f":"se',  # torn last line: the writer was killed
    ]))
    (tmp_path / "histories" / "idempotent-0.jsonl").write_text("\n".join([  # one session
        '{"type":"header","format":"producer-history","version":1}',
        '{"type":"producer-id","ses":1,"producer_id":4,"epoch":0,"t":2}']) + "\n")
    (tmp_path / "nemesis.jsonl").write_text("\n".join([
        '{"type":"header","format":"nemesis-history","version":1,"run":"r","seed":1}',
        '{"type":"ok","f":"start","fault":"producer-kill","target":{"process":'
        '"producer:transactional"},"id":1,"t":3,"detail":{"process":"producer:transactional"}}',
        '{"type":"ok","f":"start","fault":"producer-kill","target":{"process":'
        '"producer:idempotent"},"id":2,"t":3,"detail":{"process":"producer:idempotent"}}',
    ]) + "\n")
    lines = fault_summary(tmp_path)
    assert lines[0] == ("producer-kill on producer:transactional: fired; producer id 3 "
                        "epoch 0 (session 1) -> producer id 3 epoch 2 (session 2)")
    assert lines[1] == "producer-kill on producer:idempotent: fired"


def test_a_crashed_run_still_renders_every_output(tmp_path):
    from types import SimpleNamespace

    from verifier.assess.facts import crashed_facts
    from verifier.assess.finish import Judged, finish
    from verifier.assess.outputs import write_outputs
    from verifier.orchestration.chaos import crashed_doc
    from verifier.orchestration.phases import PhaseClock
    from verifier.report import render_terminal

    s = parse_scenario("[workload]\nmodes = ['idempotent']", "x")
    run = SimpleNamespace(plans=plan_producers(s, "r1", RunOptions(out=tmp_path)),
                          run_id="r1", scenario=s, sink="exactly-once", clock=PhaseClock(),
                          notes=[])
    doc = finish(Judged(crashed_doc(run, RuntimeError("broker gone")), crashed_facts(tmp_path)))
    assert doc["exit_code"] == 2 and doc["columns"][0]["verdict"] == "UNKNOWN"
    assert "broker gone" in doc["columns"][0]["reasons"][0]
    assert "UNKNOWN" in render_terminal(doc)
    paths = write_outputs(doc, tmp_path)
    assert all(p.exists() for p in paths)
    assert "broker gone" in (tmp_path / "junit.xml").read_text()


def test_a_run_keeps_its_part_of_the_proxy_connection_log(tmp_path):
    from verifier.orchestration.connection_log import save_connections

    log = tmp_path / "connections.jsonl"
    header = b'{"type":"header","format":"proxy-connections","version":1}\n'
    earlier = b'{"event":"open","conn":1,"t":1}\n'
    log.write_bytes(header + earlier)
    offset = log.stat().st_size  # the run starts here
    mine = b'{"event":"open","conn":2,"t":5}\n{"event":"close","conn":2,"t":6}\n'
    log.write_bytes(header + earlier + mine + b'{"event":"op')  # last line being written
    save_connections(log, offset, tmp_path / "run.jsonl")
    assert (tmp_path / "run.jsonl").read_bytes() == header + mine
    save_connections(log, 0, tmp_path / "all.jsonl")  # from the start: header once
    assert (tmp_path / "all.jsonl").read_bytes() == header + earlier + mine


def test_the_copy_waits_for_the_close_lines_of_the_stopped_processes(tmp_path, monkeypatch):
    """The proxy logs a close when it has seen the exit of a process the run just
    stopped; the copy waits for the log to be quiet, so those closes are in the run's."""
    import threading

    import verifier.orchestration.connection_log as orch

    monkeypatch.setattr(orch, "CONN_LOG_QUIET_S", 0.4)
    log = tmp_path / "connections.jsonl"
    header = b'{"type":"header","format":"proxy-connections","version":2}\n'
    log.write_bytes(header + b'{"event":"open","conn":1,"t":1}\n')

    def late_closes():
        for i in range(3):  # the observer's connections, closed one after another
            time.sleep(0.15)
            with open(log, "ab") as f:
                f.write(b'{"event":"close","conn":1,"t":%d}\n' % (10 + i))

    writer = threading.Thread(target=late_closes)
    writer.start()
    orch.save_connections(log, len(header), tmp_path / "run.jsonl")
    writer.join()
    assert (tmp_path / "run.jsonl").read_bytes().count(b'"close"') == 3
