"""The exposure per instance of an application (issue 47): what each instance owned
during a fault and the rebalances it saw, from the nemesis's snapshots of the state files
at the fault's start and heal (verifier.judge.faults.owners), shown in verdict.json's
exposure, the report's cells and the fault summary. Hand-written records; the snapshot
itself is read from real files written as the presets write them."""

from __future__ import annotations

import json

from verifier.harness.faults.kinds.application import owners
from verifier.judge import exposure as E
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.owners import per_instance
from verifier.report.compare import exposure_text
from verifier.report.faults import fault_summary
from verifier.report.terminal import exposure_cell

T0 = 1_000_000


def snap(pid, assigned, rebalances):
    return {"pid": pid, "assigned": assigned, "rebalances": rebalances, "alive": True}


START = {"app/a/0": snap(10, ["r.t-0", "r.t-1"], 2), "app/a/1": snap(11, ["t-2"], 2),
         "app/b/0": snap(20, ["t-0", "t-1", "t-2"], 0), "app/b/1": None}
HEAL = {"app/a/0": snap(30, [], 1),  # killed and restarted: a new process, one rebalance
        "app/a/1": snap(11, ["t-0", "t-1", "t-2"], 3),
        "app/b/0": snap(20, ["t-0", "t-1", "t-2"], 0), "app/b/1": None}


def test_each_instance_owned_what_it_held_at_either_end_and_saw_its_counters_rise():
    got = per_instance({"owners": START}, {"owners": HEAL})
    a0, a1 = got["a"]
    assert a0 == {"instance": 0, "owned": ["r.t-0", "r.t-1"], "at_start": ["r.t-0", "r.t-1"],
                  "at_end": [], "rebalances": 1, "restarted": True}
    assert a1["owned"] == ["t-0", "t-1", "t-2"] and a1["rebalances"] == 1
    assert "restarted" not in a1
    b0, b1 = got["b"]
    assert b0["rebalances"] == 0 and b0["owned"] == ["t-0", "t-1", "t-2"]
    assert b1 == {"instance": 1, "state": False}  # no state file: nothing known
    # an instance there at one end only (added by scale-out): its rebalances not counted
    added = per_instance({"owners": {}}, {"owners": {"app/a/2": snap(40, ["t-1"], 1)}})
    assert added["a"] == [{"instance": 2, "owned": ["t-1"], "at_start": [],
                           "at_end": ["t-1"], "rebalances": None, "seen": "end"}]
    # added, its file not written yet at the start, gone at the end: not "no state file"
    young = per_instance({"owners": {"app/a/2": None}}, {"owners": {}})["a"][0]
    assert young["seen"] == "start" and "state" not in young and young["owned"] == []
    assert per_instance({}, {}) == {}  # a run without applications, or recorded before


def test_the_snapshot_reads_each_instances_state_file(tmp_path):
    class Proc:
        def __init__(self, name, doc):
            self.alive, self.state_file = True, tmp_path / name.replace("/", "_")
            if doc is not None:
                self.state_file.write_text(json.dumps(doc))

    procs = {"app/a/0": Proc("app/a/0", {"pid": 7, "assigned": ["t-1"], "rebalances": 4,
                                         "at_risk": 3}),
             "app/a/1": Proc("app/a/1", None), "observer": Proc("observer", None)}
    assert owners(procs) == {"app/a/0": {"pid": 7, "assigned": ["t-1"], "rebalances": 4,
                                         "alive": True}, "app/a/1": None}


def nemesis(kind="broker-kill", target=None):
    target = target or {"node": 1}
    return [{"type": "invoke", "f": "start", "fault": kind, "target": target, "id": 1,
             "t": T0},
            {"type": "ok", "f": "start", "fault": kind, "target": target, "id": 1, "t": T0,
             "detail": {"killed": [{"app": "a", "instance": 0, "process": "app/a/0",
                                    "state": {"at_risk": 5}}], "owners": START}},
            {"type": "ok", "f": "heal", "fault": kind, "target": target, "id": 1,
             "t": T0 + 3000, "detail": {"owners": HEAL}}]


def test_the_exposure_cell_and_report_carry_the_instances(tmp_path):
    col = ColumnSpec(name="app:a@read_committed", mode="app:a", pids=(), topics=(),
                     app="app:a")
    prod = ColumnSpec(name="idempotent", mode="idempotent", pids=("p-0",), topics=("t",))
    got = E.exposure(RunFacts(nemesis=nemesis("instance-kill", {"instance": 0}),
                              columns=[col, prod]))
    entry = got["app:a@read_committed"]["faults"][0]
    assert entry["acted"] == 5 and [i["instance"] for i in entry["instances"]] == [0, 1]
    assert exposure_cell(entry) == "5 [i0 2p 1rbr, i1 3p 1rb]"
    assert E.summary(got["app:a@read_committed"]) == "instance-kill #1: 5 [i0 2p 1rbr, i1 3p 1rb]"
    assert exposure_text([got["app:a@read_committed"]]) == "exp 5 · 2 rebalances"
    assert got["idempotent"]["faults"] == []  # a kill of an instance: not the producers'
    write(tmp_path, nemesis("instance-kill", {"instance": 0}))
    (line,) = fault_summary(tmp_path)
    assert "a/0 owned t-0,t-1 -> none, 1 rebalance(s) since its restart" in line
    assert "a/1 owned t-2 -> t-0,t-1,t-2, 1 rebalance(s)" in line
    assert "b/1 keeps no state file" in line


def write(run_dir, ops) -> None:
    head = {"type": "header", "format": "nemesis-history", "version": 1, "run": "r"}
    (run_dir / "nemesis.jsonl").write_text("".join(json.dumps(o) + "\n" for o in [head, *ops]))


def test_an_instance_killed_at_the_planned_time_says_so_in_the_summary(tmp_path):
    ops = nemesis("instance-kill", {"instance": 0})
    ops[1]["detail"]["killed"][0].update(state=None, fallback="no state file: acted at "
                                         "the planned time")
    write(tmp_path, ops)
    assert "app/a/0: no state file: acted at the planned time" in fault_summary(tmp_path)[0]


def broker_window(kind="broker-kill", leads=(), owners_at_start=None, outputs=None):
    detail = {"node": 2, "owners": owners_at_start if owners_at_start is not None else
              {"app/a/0": snap(10, ["r.t-0", "r.t-1"], 0), "app/a/1": snap(11, ["r.t-2"], 0)}}
    if leads is not None:
        detail["leads"] = [list(x) for x in leads]
    detail["app_outputs"] = outputs or {"a": "r.app.a.out"}
    from verifier.judge.faults.windows import Window

    return Window(1, kind, {"node": 2}, tried=T0, end=T0 + 5000, outcome="ok",
                  start_detail=detail, heal_detail={"owners": detail["owners"]},
                  completed=True)


APP = ColumnSpec(name="app:a@read_committed", mode="app:a", pids=(), topics=(), app="app:a")


def test_a_broker_fault_counts_the_instances_it_reached():
    from verifier.judge.faults import acted_on, concerns

    facts = RunFacts(nemesis=[], columns=[])
    # it led input partition 1: instance 0, which owned it
    w = broker_window(leads=[("r.t", 1)])
    assert concerns(w, APP, {})
    n, what = acted_on(w, APP, facts)
    assert n == 1 and "instance 0 (input r.t-1)" in what
    # it led an output partition: every instance that owned a partition writes there
    assert acted_on(broker_window(leads=[("r.app.a.out", 0)]), APP, facts)[0] == 2
    # it led none of them: 0, so the column is NOT EXERCISED by it, never a vacuous PASS
    assert acted_on(broker_window(leads=[("r.t", 5)]), APP, facts)[0] == 0
    for kind in ("broker-pause", "network-partition"):
        assert acted_on(broker_window(kind, leads=[("r.t", 2)]), APP, facts)[0] == 1
    # not measured: the leaders were not recorded, or an instance keeps no state file
    assert acted_on(broker_window(leads=None), APP, facts)[0] is None
    blind = broker_window(leads=[("r.t", 1)], owners_at_start={"app/a/0": None})
    assert acted_on(blind, APP, facts)[0] is None
    # a run without applications' snapshot: the application was not running, no concern
    assert not concerns(broker_window(owners_at_start={}), APP, {})
    got = E.exposure(RunFacts(nemesis=[], columns=[APP]))  # no fault: none
    assert got["app:a@read_committed"]["faults"] == []


def test_a_broker_config_change_counts_the_instances_that_owned_partitions():
    from verifier.judge.faults import acted_on, concerns

    facts = RunFacts(nemesis=[], columns=[])
    w = broker_window("broker-config", leads=None,
                      owners_at_start={"app/a/0": snap(10, ["r.t-0"], 0),
                                       "app/a/1": snap(11, [], 0)})
    assert concerns(w, APP, {})
    n, what = acted_on(w, APP, facts)
    assert n == 1 and "2 running" in what
