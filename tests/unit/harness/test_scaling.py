"""scale-out and scale-in (issue 47): one more instance started as a copy of the
application's own (its command, its environment but its instance number and state
file) and stopped cleanly at the heal; an instance stopped cleanly and started again;
and the verdict's half counting the rebalances the instances that stayed up saw. Real
child processes (a small Python program that writes a state file as the presets do)
stand in for the application; the chaos tier scales real copiers."""

from __future__ import annotations

import json
import sys
import textwrap
import time

from verifier.harness.faults.kinds import FaultEnv, ScheduledFault
from verifier.harness.faults.kinds.scaling import (
    extra_instance,
    heal_scale_in,
    heal_scale_out,
    start_scale_in,
    start_scale_out,
)
from verifier.harness.procs import ManagedProcess
from verifier.judge.faults import acted_on, concerns
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.windows import Window

#: an "instance": says which instance it is in its state file, then waits for SIGTERM
PROGRAM = textwrap.dedent("""
    import json, os, signal, sys, time
    path = os.environ["VERIFIER_STATE_FILE"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # before the file says "up"
    doc = {"instance": os.environ["VERIFIER_INSTANCE"], "rebalances": 0, "at_risk": 0}
    open(path, "w").write(json.dumps(doc))
    while True:
        time.sleep(0.05)
""")


def instance(tmp_path, app: str, i: int) -> ManagedProcess:
    state = tmp_path / "apps" / app / f"{i}.state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "logs").mkdir(exist_ok=True)
    proc = ManagedProcess(f"app/{app}/{i}", [sys.executable, "-c", PROGRAM],
                          tmp_path / "logs" / f"app-{app}-{i}.log",
                          env={"VERIFIER_INSTANCE": str(i), "VERIFIER_STATE_FILE": str(state),
                               "VERIFIER_GROUP_ID": f"r.app.{app}"})
    proc.state_file = state
    return proc


def started(*procs) -> None:
    """Until each has written its state file (its SIGTERM handler is set by then)."""
    deadline = time.monotonic() + 20
    while not all(p.state_file.exists() for p in procs):
        assert time.monotonic() < deadline, "an instance did not start"
        time.sleep(0.02)


def say(proc, rebalances: int) -> None:
    doc = json.loads(proc.state_file.read_text())
    proc.state_file.write_text(json.dumps({**doc, "rebalances": rebalances}))


def fault(kind: str, target: dict, **params) -> ScheduledFault:
    return ScheduledFault(1, kind, target, 0.0, 1.0, params)


def test_the_extra_instance_is_a_copy_with_its_own_number_and_state_file(tmp_path):
    template = instance(tmp_path, "a", 1)
    extra = extra_instance(template, "a", 2)
    assert extra.name == "app/a/2" and extra.argv == template.argv
    assert extra.env["VERIFIER_INSTANCE"] == "2"
    assert extra.env["VERIFIER_GROUP_ID"] == "r.app.a"
    assert extra.state_file == tmp_path / "apps" / "a" / "2.state.json"
    assert extra.env["VERIFIER_STATE_FILE"] == str(extra.state_file)
    assert extra.log_path.name == "app-a-2.log"


def test_scale_out_starts_one_more_instance_and_its_heal_stops_it(tmp_path):
    procs = {p.name: p for p in (instance(tmp_path, "a", 0), instance(tmp_path, "a", 1))}
    try:
        for p in procs.values():
            p.start()
        env = FaultEnv("b:1", processes=procs)
        state: dict = {}
        started(*procs.values())
        detail = start_scale_out(fault("scale-out", {"apps": True}), env, state)
        assert [a["process"] for a in detail["added"]] == ["app/a/2"]
        assert procs["app/a/2"].alive
        started(procs["app/a/2"])
        assert detail["rebalances"] == {"app/a/0": 0, "app/a/1": 0}
        say(procs["app/a/0"], 1)  # saw the join; app/a/1 sees the leave below
        settling = heal_scale_out(fault("scale-out", {"apps": True}, observe=5), env, state)
        added = settling.detail["stopped"][0]
        assert added["process"] == "app/a/2" and added["exit"] == 0
        assert "app/a/2" not in procs
        say(procs["app/a/0"], 2)
        say(procs["app/a/1"], 1)
        assert settling.wait()["rebalances"] == {"app/a/0": 2, "app/a/1": 1}
    finally:
        for p in procs.values():
            p.terminate(timeout=5)


def test_scale_in_stops_an_instance_cleanly_and_its_heal_starts_it_again(tmp_path):
    procs = {p.name: p for p in (instance(tmp_path, "a", 0), instance(tmp_path, "a", 1))}
    try:
        for p in procs.values():
            p.start()
        started(*procs.values())
        env = FaultEnv("b:1", processes=procs)
        state: dict = {}
        detail = start_scale_in(fault("scale-in", {"instance": 1}, observe=0.5), env, state)
        assert detail["stopped"][0]["exit"] == 0 and not procs["app/a/1"].alive
        assert state["watch"] == ["app/a/0"]
        heal_scale_in(fault("scale-in", {"instance": 1}, observe=0.5), env, state)
        assert procs["app/a/1"].alive
    finally:
        for p in procs.values():
            p.terminate(timeout=5)


def column(name: str) -> ColumnSpec:
    return ColumnSpec(f"app:{name}@read_committed", f"app:{name}", (), (), app=f"app:{name}")


def test_the_verdict_counts_the_rebalances_the_instances_that_stayed_saw():
    facts = RunFacts(nemesis=[], columns=[])
    w = Window(1, "scale-out", {"apps": True}, tried=1, end=2, outcome="ok", completed=True,
               start_detail={"added": [{"app": "a", "process": "app/a/2"}],
                             "rebalances": {"app/a/0": 3, "app/a/1": 0, "app/b/0": 0}},
               heal_detail={"rebalances": {"app/a/0": 5, "app/a/1": 2, "app/b/0": 9}})
    assert concerns(w, column("a"), {}) and not concerns(w, column("b"), {})
    count, why = acted_on(w, column("a"), facts)
    assert count == 4 and "2 instance(s)" in why
    # a counter that went back (the copier started over): never negative
    w.heal_detail = {"rebalances": {"app/a/0": 0, "app/a/1": 1}}
    assert acted_on(w, column("a"), facts)[0] == 1
    w.heal_detail = {}
    assert acted_on(w, column("a"), facts)[0] is None
    w = Window(1, "scale-in", {"instance": 1}, tried=1, end=2, outcome="ok", completed=True,
               start_detail={"stopped": [{"app": "a", "process": "app/a/1"}],
                             "rebalances_before": {"app/a/0": 1},
                             "rebalances": {"app/a/0": 2}},
               heal_detail={"rebalances": {"app/a/0": 3}})
    assert acted_on(w, column("a"), facts)[0] == 2
