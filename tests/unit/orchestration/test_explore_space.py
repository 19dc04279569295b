"""`verifier explore`'s space (docs/explore.md): every generated scenario is one the
runner accepts, each classifies back into its own cell, and the known bugs' hand-written
schedules fall into cells of the space and are recognized there."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from verifier.orchestration.explore.fingerprint import (
    Fingerprint,
    cells_of,
    classify,
    fail_fingerprints,
    known_text,
    recognize,
    signatures,
)
from verifier.orchestration.explore.space import (
    EVENTS,
    PERTURBATIONS,
    REQUESTS,
    Perturbation,
    expressible,
    key_of,
    parse_requests,
    plan,
    space,
    workload_of,
)
from verifier.orchestration.explore.trials import app_run, scenario_spec, speaks_tv2
from verifier.orchestration.known_bugs import load_known_bugs
from verifier.orchestration.planning import RunOptions, validate_scenario
from verifier.orchestration.scenario import load_scenario, parse_scenario
from verifier.orchestration.shrink_plan import scenario_toml
from verifier.rundata.apps import plan_apps
from verifier.rundata.errors import UsageError

COMBOS = [("3.5.2", "kafka-python"), ("4.1.1", "java"), ("4.1.1", "java:3.9.1")]


@pytest.mark.parametrize(("kafka", "client"), COMBOS)
def test_every_planned_trial_is_a_scenario_the_runner_accepts(kafka, client):
    env = SimpleNamespace(skipped_kinds=lambda: set(), client_config={})
    opts = RunOptions(out=Path("o"), client=client)
    for trial in plan(client):
        spec = scenario_spec(trial, kafka, client)
        scenario = parse_scenario(scenario_toml(spec), spec["name"])
        assert scenario.to_json() == spec  # the file shrink writes parses back to it
        app = app_run(trial, client)  # the app workload's, beside it (--app)
        apps = tuple(plan_apps(app[0], None, app[2])) if app else ()
        assert validate_scenario(scenario, replace(opts, apps=apps), env) == [], key_of(trial)
        assert cells_of(scenario.faults) == trial  # each fault classifies into its cell


def test_the_space_is_what_the_fault_params_express():
    cells = space()
    assert len(cells) == len(set(cells))
    every = {Perturbation(r, k, e) for r in REQUESTS for k in PERTURBATIONS for e in EVENTS}
    assert set(cells) == {c for c in every if expressible(c)}
    keys = {c.key for c in cells}
    # a held request is never released by its own answer; markers only for what writes a log
    assert "endtxn-held-own-answer" not in keys and "endtxn-held-abort-marker" not in keys
    assert "produce-held-abort-marker" in keys and "txnoffsetcommit-copy-abort-marker" in keys
    # error answers and drops have no other event; no error answer on the replication listener
    assert not any(c.kind in ("refused", "replaced", "dropped") and c.event != "own-answer"
                   for c in cells)
    assert not any(c.request == "WriteTxnMarkers" and c.kind not in ("held", "copy")
                   for c in cells)
    # the copier is kafka-python's only; a Java application commits its offsets too
    assert not any(c.request == "TxnOffsetCommit" and workload_of(c) != "app"
                   for c in space("java"))


def test_budget_order_singles_first_then_pairs():
    trials = plan()
    sizes = [len(t) for t in trials]
    assert sizes == sorted(sizes) and sizes[0] == 1 and sizes[-1] == 2
    singles = [t[0] for t in trials if len(t) == 1]
    assert singles[0] == Perturbation("Produce", "held", "abort-marker")
    order = list(REQUESTS)
    # the app workload's last (an application and a joining instance), each part in
    # request order
    app = [workload_of(c) == "app" for c in singles]
    assert app == sorted(app) and any(app)
    for part in ([c for c in singles if workload_of(c) != "app"],
                 [c for c in singles if workload_of(c) == "app"]):
        assert [order.index(c.request) for c in part] == \
            sorted(order.index(c.request) for c in part)
    for a, b in (t for t in trials if len(t) == 2):
        assert a.request != b.request
        assert workload_of(a) == workload_of(b) != "app"


def test_release_events_by_client():
    produce_next = Perturbation("Produce", "held", "next-write")
    kp = scenario_spec((produce_next,), "3.5.2", "kafka-python")["faults"][0]["params"]
    tv2 = scenario_spec((produce_next,), "4.1.1", "java")["faults"][0]["params"]
    # the next transaction's first write: its AddPartitionsToTxn, or its Produce at version 2
    assert kp["release_on"]["api_key"] == 24 and tv2["release_on"]["api_key"] == 0
    assert speaks_tv2("4.1.1", "java") and speaks_tv2("4.1.1", "java:4.1.1")
    assert not speaks_tv2("3.5.2", "java") and not speaks_tv2("4.1.1", "java:3.9.1")
    assert not speaks_tv2("4.1.1", "kafka-python")
    marker = scenario_spec((Perturbation("Produce", "held", "abort-marker"),), "3.5.2",
                           "kafka-python")
    assert marker["faults"][0]["params"]["after_marker"] == "abort"
    assert marker["workload"]["abort_fraction"] == 0.0
    wtm = scenario_spec((Perturbation("WriteTxnMarkers", "copy", "next-write"),), "4.1.1", "java")
    assert wtm["proxy_replication"] is True
    assert parse_scenario(scenario_toml(wtm), "x").proxy_replication


def test_a_copied_end_of_a_transaction_is_a_commit_released_into_one_meant_to_abort():
    """KAFKA-17754 and KAFKA-19446 need the stale commit to land in a next transaction of
    the opposite outcome: one meant to commit, ended early, shows nothing (4.1.1 with the
    Java client 3.9.1 found nothing so, 2026-11-30)."""
    for request, client in (("EndTxn", "java:3.9.1"), ("EndTxn", "kafka-python"),
                            ("WriteTxnMarkers", "java:4.1.1")):
        spec = scenario_spec((Perturbation(request, "copy", "next-write"),), "4.1.1", client)
        params = spec["faults"][0]["params"]
        assert params["committed"] is True and params["client_view"] == "copy"
        release = params["release_on"]
        assert (release["api_key"], release["records"], release["ok"]) == (0, "abort", True)
        assert "after" not in release
        assert (release.get("producer"), release.get("partition")) == (
            ("same", "same") if request == "WriteTxnMarkers" else (None, None))
        # a marker's copy is released by its next transaction only, which aborts half the
        # time: several copies (one went unreleased on 4.1.1); an EndTxn's by any later one
        assert params["limit"] == (4 if request == "WriteTxnMarkers" else 1)
        assert spec["workload"]["abort_fraction"] > 0
        parsed = parse_scenario(scenario_toml(spec), "x")
        assert [c.key for c in cells_of(parsed.faults)] == [
            f"{request.lower()}-copy-next-write"]
    # the other events and requests are as before: no outcome asked of the next one
    produce = scenario_spec((Perturbation("Produce", "copy", "next-write"),), "3.5.2",
                            "kafka-python")["faults"][0]["params"]
    assert "committed" not in produce and "records" not in produce["release_on"]
    end = scenario_spec((Perturbation("EndTxn", "copy", "next-end-txn"),), "3.5.2",
                        "kafka-python")["faults"][0]["params"]
    assert "committed" not in end


def _sigs():
    return signatures(load_known_bugs(), load_scenario)


def test_known_bug_schedules_fall_into_the_space():
    sigs = _sigs()
    cells = {s.bug: s.cell.key for s in sigs}
    assert cells["KAFKA-14402"] in ("produce-held-abort-marker", "produce-held-next-end-txn")
    assert {s.cell.key for s in sigs if s.bug == "KAFKA-14402"} == \
        {"produce-held-abort-marker", "produce-held-next-end-txn"}
    assert cells["KAFKA-17754 (b)"] == "produce-held-next-write"
    assert cells["KAFKA-17754"] == "endtxn-copy-next-write"
    assert cells["KAFKA-15449"] == "txnoffsetcommit-copy-abort-marker"
    assert cells["KAFKA-19446"] == "writetxnmarkers-copy-next-write"
    keys = {t[0].key for t in plan() if len(t) == 1}
    assert {s.cell.key for s in sigs} <= keys


def test_a_finding_is_named_and_recognized_by_its_fingerprint():
    sigs = _sigs()
    held = Perturbation("Produce", "held", "abort-marker")
    fp = Fingerprint("transactional", "duplicate", (held,))
    assert fp.name == "transactional-duplicate-produce-held-abort-marker" and fp.own
    known = recognize(fp, sigs, "3.5.2", "kafka-python")
    assert known == [{"bug": "KAFKA-14402", "status": "affected"}]
    assert "documented affected here" in known_text(known)
    # fixed on 4.1.1 at the defaults: a finding there contradicts the table
    assert recognize(fp, sigs, "4.1.1", "kafka-python")[0]["status"] == "fixed"
    # the same cell in another column kind, or another cell: not that bug
    assert recognize(Fingerprint("copier", "lost", (held,)), sigs, "3.5.2",
                     "kafka-python") == []
    other = Fingerprint("transactional", "duplicate",
                        (Perturbation("AddOffsetsToTxn", "refused", "own-answer"),))
    assert recognize(other, sigs, "3.5.2", "kafka-python") == []
    assert "new finding" in known_text([])
    copy = Fingerprint("transactional", "aborted-read",
                       (Perturbation("EndTxn", "copy", "next-write"),))
    assert not copy.own
    assert recognize(copy, sigs, "4.1.1", "java:3.9.1") == \
        [{"bug": "KAFKA-17754", "status": "affected"}]


def test_classify_reads_the_schedule_not_the_name():
    assert classify({"kind": "broker-kill", "params": {}}) is None
    assert classify({"kind": "hold", "params": {"release_after_ms": 100}}) is None
    assert classify({"kind": "ack-loss", "params": {}}) == \
        Perturbation("Produce", "dropped", "own-answer")
    assert classify({"kind": "error-answer", "params": {"api": "end-txn",
                                                        "variant": "replace"}}) == \
        Perturbation("EndTxn", "replaced", "own-answer")


def test_every_copier_trial_restarts_its_copier_after_its_perturbation():
    for trial in plan("kafka-python", 40):
        spec = scenario_spec(trial, "3.6.2", "kafka-python")
        kills = [f for f in spec["faults"] if f["kind"] == "producer-kill"]
        if "copier" not in spec["workload"]["modes"]:
            assert kills == [], key_of(trial)
            continue
        # part of the copier workload: one kill inside a transaction, restarted
        (kill,) = kills
        assert kill["target"] == {"process": "producer:copier"} and kill["duration"] == 2
        perturbations = spec["faults"][:len(trial)]
        copies = [f for p, f in zip(trial, perturbations, strict=True) if p.kind == "copy"]
        if copies:  # after the copy's answer and the commit that follows it
            assert kill["params"]["trigger"] == "copy-committed", key_of(trial)
            assert kill["start"] == copies[0]["start"]
        else:  # after the perturbation's window
            assert kill["params"]["trigger"] == "in-transaction", key_of(trial)
            assert kill["start"] > max(f["start"] + f["duration"] for f in perturbations)
        # the load outlasts the kill's wait and its restart
        assert spec["workload"]["duration_s"] > \
            kill["start"] + kill["params"]["within"] + kill["duration"]
        assert spec["workload"]["abort_fraction"] == 0.1


def test_a_copier_fail_on_3_6_2_is_named_kafka_15449():
    cell = Perturbation("TxnOffsetCommit", "copy", "abort-marker")
    spec = scenario_spec((cell,), "3.6.2", "kafka-python")
    scenario = parse_scenario(scenario_toml(spec), spec["name"])
    # the restart the bug's own schedule forces, by the same trigger
    hand = [f for f in load_scenario("kafka-15449").faults if f["kind"] == "producer-kill"]
    kill = next(f for f in scenario.faults if f["kind"] == "producer-kill")
    assert kill["params"]["trigger"] == hand[0]["params"]["trigger"] == "copy-committed"
    assert kill["target"] == hand[0]["target"]
    doc = {"columns": [
        {"name": "idempotent@read_committed", "mode": "idempotent", "verdict": "PASS"},
        {"name": "copier@read_committed", "mode": "copier", "verdict": "FAIL",
         "forbidden": ["lost"]}]}
    ((column, fp),) = fail_fingerprints(doc, scenario.faults)  # the kill has no cell
    assert column == "copier@read_committed" and fp.cells == (cell,)
    assert fp.name == "copier-lost-txnoffsetcommit-copy-abort-marker" and not fp.own
    sigs = _sigs()
    assert recognize(fp, sigs, "3.6.2", "kafka-python") == \
        [{"bug": "KAFKA-15449", "status": "affected"}]
    assert recognize(fp, sigs, "4.1.1", "kafka-python") == \
        [{"bug": "KAFKA-15449", "status": "fixed"}]


def test_requests_focus_the_plan_on_named_request_types():
    assert parse_requests("writetxnmarkers, EndTxn") == ("EndTxn", "WriteTxnMarkers")
    with pytest.raises(UsageError, match="unknown request type fetch.*WriteTxnMarkers"):
        parse_requests("endtxn,fetch")
    with pytest.raises(UsageError, match="no request type"):
        parse_requests(" , ")
    focus = parse_requests("writetxnmarkers,endtxn")
    trials = plan("java:4.1.1", 12, focus)
    assert trials and all(p.request in focus for t in trials for p in t)
    whole = plan("java:4.1.1", 12)
    # the same trials in the same order, the others left out
    assert trials == [t for t in whole if all(p.request in focus for p in t)]
    # KAFKA-19446's cell: among the last singles of the whole space, early in the focus
    wtm = (Perturbation("WriteTxnMarkers", "copy", "next-write"),)
    assert trials.index(wtm) < 12 and plan("kafka-python").index(wtm) > 50
    assert plan("java:4.1.1", 12, parse_requests("WRITETXNMARKERS")).index(wtm) == 2
    assert scenario_spec(wtm, "4.1.1", "java:4.1.1")["proxy_replication"] is True
    # pairs only of the named types
    both = plan("kafka-python", 40, parse_requests("produce,endtxn"))
    assert any(len(t) == 2 for t in both)
    assert {p.request for t in both for p in t} == {"Produce", "EndTxn"}


def test_an_applications_instance_is_named_by_its_transactional_id():
    """``@app:<name>/<instance>`` in a hold resolves to that instance's transactional id
    (the presets': the run's prefix and the instance), one fault; an instance the run does
    not have, or a malformed name, is an error naming the form."""
    from verifier.orchestration.planning import _per_client
    from verifier.rundata.errors import VerifierError

    fault = scenario_spec((Perturbation("TxnOffsetCommit", "copy", "rebalance"),), "3.5.2",
                          "kafka-python")["faults"][0]
    procs = {"app/copier-transactional/0", "app/copier-transactional/1"}
    (one,) = _per_client(fault, procs, [], "run-1")
    assert one["params"]["transactional_id"] == "run-1.app.copier-transactional.0"
    assert one["params"]["release_on"] == {"api_key": 14, "direction": "response"}
    with pytest.raises(VerifierError, match="no instance 0 of an application"):
        _per_client(fault, {"app/other/0"}, [], "run-1")
    bad = {**fault, "params": {**fault["params"], "transactional_id": "@app:copier"}}
    with pytest.raises(VerifierError, match="@app:<name>/<instance>"):
        _per_client(bad, procs, [], "run-1")
