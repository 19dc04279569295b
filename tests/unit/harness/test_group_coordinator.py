"""The applications' group faults beyond a zombie (issue 47): the group coordinator's
broker killed (its target, the broker it picks, what its start and heal record, and its
exposure per application), and a proxy rule on the offset commits counted for the
application whose instances' clients it met (docs/applications.md "Not yet" 2: before,
a proxy fault left every application column out)."""

from __future__ import annotations

import pytest

from verifier.harness.faults.kinds import KINDS
from verifier.harness.faults.kinds.base import NotApplied
from verifier.harness.faults.kinds.group import app_groups, apps_target, pick_coordinator
from verifier.judge.faults import acted_on, column_of, concerns
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.windows import Window
from verifier.rundata.apps import client_prefixes
from verifier.rundata.errors import UsageError

PROCS = {"app/a/0", "app/a/1", "app/b/0", "observer", "producer:idempotent"}


def test_the_target_names_every_application_or_one():
    assert app_groups({"apps": True}, PROCS) == {"a": ["app/a/0", "app/a/1"],
                                                  "b": ["app/b/0"]}
    assert app_groups({"app": "b"}, PROCS) == {"b": ["app/b/0"]}
    apps_target({"apps": True}, None, PROCS)
    for bad in ({"apps": False}, {"node": 1}, {"app": 3}, {"app": "a", "instance": 0}):
        with pytest.raises(UsageError, match="target must be"):
            apps_target(bad, None, None)
    with pytest.raises(UsageError, match="no application matches"):
        apps_target({"app": "c"}, None, PROCS)
    kind = KINDS["group-coordinator-kill"]
    assert kind.needs == "cluster" and kind.on_brokers


def test_the_broker_coordinating_the_most_groups_is_killed():
    assert pick_coordinator({"g1": 2, "g2": 3, "g3": 3}) == 3
    assert pick_coordinator({"g1": 2, "g2": 1, "g3": None}) == 1  # a tie: the lowest id
    with pytest.raises(NotApplied, match="no application group"):
        pick_coordinator({"g1": None})


def window(kind: str, start: dict, heal: dict | None = None, target=None) -> Window:
    return Window(1, kind, target or {"apps": True}, tried=1000, end=2000, outcome="ok",
                  start_detail=start, heal_detail=heal or {}, completed=True)


def column(name: str, run: str = "r") -> ColumnSpec:
    mode = f"app:{name}"
    return ColumnSpec(name=f"{mode}@read_committed", mode=mode, pids=(), topics=(), app=mode,
                      client_prefixes=client_prefixes(run, name))


def test_the_kill_acted_on_the_instances_of_the_groups_it_coordinated():
    facts = RunFacts(nemesis=[], columns=[])
    held = {"assigned": ["t-0"], "at_risk": 30}
    idle = {"assigned": [], "at_risk": 0}
    w = window("group-coordinator-kill",
               {"node": 2, "groups": {"a": 2, "b": 1},
                "instances": {"a": [held, idle], "b": [held]}},
               {"errors": {"a": [{"type": "CommitFailedError", "t": 1}]}})
    assert concerns(w, column("a"), {}) and concerns(w, column("b"), {})
    assert not concerns(w, column("c"), {})
    assert not concerns(w, ColumnSpec("idempotent", "idempotent", ("p",), ()), {})
    count, why = acted_on(w, column("a"), facts)
    assert count == 1 and "30 records in flight" in why and "CommitFailedError" in why
    count, why = acted_on(w, column("b"), facts)
    assert count == 0 and "coordinator was node 1" in why
    # the same kill was b's transaction coordinator (the first real run: a transactional
    # copier stuck in its commit, shown as exposure 0 when only the group counted)
    w.start_detail["roles"] = {"b": {"txn": {"r.app.b.0": 2}, "out": {"0": 1, "1": 2}}}
    count, why = acted_on(w, column("b"), facts)
    assert count == 1 and "transaction coordinator of r.app.b.0" in why
    assert "output partition(s) 1" in why
    unknown = window("group-coordinator-kill", {"node": 2, "groups": {"a": 2},
                                                "instances": {"a": [None]}})
    assert acted_on(unknown, column("a"), facts)[0] is None


def test_a_rule_on_the_offset_commits_counts_the_answers_lost_to_an_applications_clients():
    facts = RunFacts(nemesis=[], columns=[])
    clients = {"r.app.a.0.consumer": [10, 4], "r.app.a.1.producer": [3, 1],
               "r.app.a-x-StreamThread-1-producer": [2, 2], "r.app.ab.0.consumer": [7, 7],
               "verifier.generator.p": [0, 0]}
    w = window("ack-loss", {"rule": {"api_keys": [8, 28]}}, {"clients": clients},
               {"all": True})
    assert concerns(w, column("a"), {})
    assert acted_on(w, column("a"), facts)[0] == 4 + 1 + 2  # not app "ab"'s
    assert acted_on(w, column("ab"), facts)[0] == 7
    assert not concerns(w, column("c"), {})  # met none of its clients
    # the producers' columns: a rule off Produce that met none of their clients
    producer = ColumnSpec("idempotent", "idempotent", ("p",), ())
    assert not concerns(w, producer, {})


def test_the_verdicts_column_of_an_application_knows_its_clients():
    from types import SimpleNamespace

    config = SimpleNamespace(run="r", producers={}, pipelines={})
    col = column_of(config, "app:a")
    assert col.client_prefixes == ("r.app.a.", "r.app.a-")
    assert column_of(config, "idempotent").client_prefixes == ()


def test_the_exposure_facts_give_an_applications_column_its_prefixes(tmp_path, monkeypatch):
    """The batch and live passes build their columns in exposure_facts: the same
    prefixes (without them a proxy fault would count nothing for an application)."""
    from types import SimpleNamespace

    from verifier.judge import exposure_facts as F

    # the producers' histories and the pipelines' batches are not what this is about
    monkeypatch.setattr(F, "_sends_and_txns", lambda history: ({}, {}))
    monkeypatch.setattr(F, "_batches", lambda run_dir, config: {})
    monkeypatch.setattr(F, "_own_ids", lambda run_dir, config: ({}, {}))
    config = SimpleNamespace(run="r", producers={}, pipelines={})
    run = SimpleNamespace(config=config, nemesis=[], drain=None)
    doc = {"columns": [{"name": "app:a@read_committed", "mode": "app:a",
                        "expect": "app/at-least-once", "isolations": ["read_committed"]}]}
    facts = F.facts_of(tmp_path, doc, run, history=[])
    assert facts.columns[0].client_prefixes == ("r.app.a.", "r.app.a-")
