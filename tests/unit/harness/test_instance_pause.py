"""instance-pause (issue 47, a zombie): the pause stops an instance in a batch and keeps
what it was doing; the heal sees which of its partitions another instance took before
the SIGCONT and then what the resumed instance did (an error after the resume: its
writes refused; its batch counter rising: they went through); the verdict's half counts
the batch in flight only where partitions moved, and says whether the zombie was fenced.
Fake processes stand in (the handlers' own logic; the chaos tier pauses real instances);
the copier's error record is its real function on a real file."""

from __future__ import annotations

import json
import signal
import time

import pytest

from producers.app_copier import previous_errors, record_error
from verifier.harness.faults.kinds import KINDS, FaultEnv, ScheduledFault
from verifier.harness.faults.kinds.group import (
    heal_instance_pause,
    moved,
    start_instance_pause,
)
from verifier.harness.faults.spec import parse_spec
from verifier.judge.faults import acted_on, concerns
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.windows import Window
from verifier.rundata.errors import UsageError


class FakeInstance:
    """A process that obeys SIGSTOP / SIGCONT as far as the handlers can tell, and whose
    state file the test writes as the instance would."""

    def __init__(self, tmp_path, name: str, **state) -> None:
        self.name, self.pid, self.alive, self.signals = name, 100, True, []
        self.state_file = tmp_path / (name.replace("/", "_") + ".json")
        self.say(**{"pid": 100, "at_risk": 0, "batches": 3, "assigned": [], **state})

    def say(self, **fields) -> None:
        doc = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        self.state_file.write_text(json.dumps({**doc, **fields}))

    def send_signal(self, sig) -> None:
        self.signals.append(sig)


def fault(**params) -> ScheduledFault:
    return ScheduledFault(1, "instance-pause", {"instance": 0}, 0.0, 1.0, params)


def test_the_kind_takes_an_instance_target_and_only_observe_as_its_own_param():
    assert KINDS["instance-pause"].family.name == "group"
    parse_spec({"kind": "instance-pause", "target": {"instance": 0}, "start": 1,
                "duration": 25, "params": {"trigger": "at-risk", "observe": 20}}, "s")
    for bad in ({"observe": 0}, {"observe": True}, {"signal": "KILL"}):
        with pytest.raises(UsageError, match="observe"):
            parse_spec({"kind": "instance-pause", "target": {"instance": 0}, "start": 1,
                        "duration": 25, "params": bad}, "s")


def test_the_pause_stops_the_instance_in_its_batch_and_keeps_its_state(tmp_path):
    procs = {"app/a/0": FakeInstance(tmp_path, "app/a/0", at_risk=40, assigned=["t-0"]),
             "app/a/1": FakeInstance(tmp_path, "app/a/1", assigned=["t-1"])}
    state: dict = {}
    detail = start_instance_pause(fault(trigger="at-risk", within=2),
                                  FaultEnv("b:1", processes=procs), state)
    assert procs["app/a/0"].signals == [signal.SIGSTOP] and not procs["app/a/1"].signals
    assert detail["paused"][0]["state"]["at_risk"] == 40
    assert state["processes"] == ["app/a/0"]


def test_moved_is_what_the_other_instances_of_its_application_hold_now(tmp_path):
    procs = {"app/a/0": FakeInstance(tmp_path, "app/a/0"),
             "app/a/1": FakeInstance(tmp_path, "app/a/1", assigned=["t-0", "t-1"]),
             "app/b/1": FakeInstance(tmp_path, "app/b/1", assigned=["t-2"])}
    assert moved("app/a/0", {"assigned": ["t-0", "t-2"]}, procs) == ["t-0"]
    assert moved("app/a/0", {"assigned": ["t-2"]}, procs) == []


def heal(procs, state, during=None) -> dict:
    settling = heal_instance_pause(fault(observe=1.5), FaultEnv("b:1", processes=procs), state)
    if during is not None:
        during()
    return settling.wait()["resumed"][0]


def paused_state(tmp_path):
    procs = {"app/a/0": FakeInstance(tmp_path, "app/a/0", at_risk=40, assigned=["t-0"]),
             "app/a/1": FakeInstance(tmp_path, "app/a/1", assigned=["t-1"])}
    state: dict = {}
    start_instance_pause(fault(), FaultEnv("b:1", processes=procs), state)
    procs["app/a/1"].say(assigned=["t-0", "t-1"])  # the group moved t-0 meanwhile
    return procs, state


def test_an_error_after_the_resume_is_a_refused_write(tmp_path):
    procs, state = paused_state(tmp_path)
    zombie = procs["app/a/0"]
    zombie.say(errors=[{"type": "OldError", "t": time.time() - 100}])  # before: not it
    entry = heal(procs, state, lambda: zombie.say(errors=[
        {"type": "OldError", "t": time.time() - 100},
        {"type": "CommitFailedError", "t": time.time(), "batches": 3}]))
    assert zombie.signals == [signal.SIGSTOP, signal.SIGCONT]
    assert entry["moved"] == ["t-0"] and entry["after"] == "refused"
    assert [e["type"] for e in entry["errors"]] == ["CommitFailedError"]


def test_a_batch_done_after_the_resume_without_error_went_through(tmp_path):
    procs, state = paused_state(tmp_path)
    entry = heal(procs, state, lambda: procs["app/a/0"].say(batches=4, at_risk=0))
    assert entry["after"] == "completed"


def test_a_batch_done_before_a_later_error_went_through(tmp_path):
    """The commit-before zombie writes its batch after the resume, then its next commit is
    refused and it starts over (its counter anew): the error's own count says the batch
    was done, so it was NOT fenced (the first real run called it fenced)."""
    procs, state = paused_state(tmp_path)
    entry = heal(procs, state, lambda: procs["app/a/0"].say(batches=0, errors=[
        {"type": "CommitFailedError", "t": time.time(), "batches": 4}]))
    assert entry["after"] == "completed" and entry["errors"][0]["batches"] == 4


def test_nothing_seen_within_observe(tmp_path):
    procs, state = paused_state(tmp_path)
    assert heal(procs, state)["after"] == "nothing-seen"


def window(paused: list[dict], resumed: list[dict]) -> Window:
    return Window(1, "instance-pause", {"instance": 0}, tried=1000, end=2000, outcome="ok",
                  start_detail={"paused": paused}, heal_detail={"resumed": resumed},
                  completed=True)


def column(mode: str) -> ColumnSpec:
    return ColumnSpec(name=f"{mode}@read_committed", mode=mode, pids=(), topics=())


def test_the_verdict_counts_the_batch_in_flight_only_where_partitions_moved():
    facts = RunFacts(nemesis=[], columns=[])
    paused = [{"process": "app/a/0", "app": "a", "instance": 0, "state": {"at_risk": 40}},
              {"process": "app/b/0", "app": "b", "instance": 0, "state": {"at_risk": 9}}]
    w = window(paused, [{"process": "app/a/0", "moved": ["t-0"], "after": "refused",
                         "errors": [{"type": "CommitFailedError"}]},
                        {"process": "app/b/0", "moved": [], "after": "completed"}])
    assert concerns(w, column("app:a"), {}) and not concerns(w, column("app:c"), {})
    assert not concerns(w, column("idempotent"), {})
    count, why = acted_on(w, column("app:a"), facts)
    assert count == 40 and "CommitFailedError" in why and "fenced" in why
    count, why = acted_on(w, column("app:b"), facts)
    assert count == 0 and "none of its partitions moved" in why
    w = window(paused[:1], [{"process": "app/a/0", "moved": ["t-0"], "after": "completed"}])
    assert "NOT fenced" in acted_on(w, column("app:a"), facts)[1]
    w = window(paused[:1], [{"process": "app/a/0", "moved": ["t-0"], "after": "completed",
                             "errors": [{"type": "CommitFailedError"}]}])
    assert "(then refused: CommitFailedError): NOT fenced" in \
        acted_on(w, column("app:a"), facts)[1]
    # no state file, or a heal never recorded: not measured
    assert acted_on(window([{**paused[0], "state": None}], []), column("app:a"),
                    facts)[0] is None
    assert acted_on(window(paused[:1], []), column("app:a"), facts)[0] is None


def test_the_copier_keeps_its_errors_across_starting_over(tmp_path):
    path = tmp_path / "0.state.json"
    path.write_text(json.dumps({"at_risk": 5, "errors": []}))
    record_error(str(path), ValueError("refused"))
    doc = json.loads(path.read_text())
    assert doc["at_risk"] == 5 and doc["errors"][0]["type"] == "ValueError"
    assert doc["errors"][0]["batches"] is None  # the file said none
    assert previous_errors(path)[0]["message"] == "refused"
    for _ in range(12):
        record_error(str(path), KeyError("x"))
    assert len(previous_errors(path)) == 10
    # a new start of its loop (new clients after the error) keeps them in its file
    from producers.app_copier import State

    State(str(path), "0", "transactional").update(at_risk=0)
    assert len(json.loads(path.read_text())["errors"]) == 10


def test_a_copier_stopped_long_into_its_commit_dumps_its_threads(tmp_path):
    # the transactional copier that never left its commit after a group-coordinator-kill
    # (2026-11-29 18:08) left an empty log: at the stop, where it waits is printed
    import io

    from producers.app_copier import STUCK_S, dump_if_stuck

    path = tmp_path / "0.state.json"
    path.write_text(json.dumps({"step": "committing", "t": 1000.0, "batches": 15,
                                "at_risk": 31}))
    with open(tmp_path / "log", "w") as out:  # faulthandler writes to a real file
        assert dump_if_stuck(str(path), now=1000.0 + STUCK_S + 1, out=out)
    said = (tmp_path / "log").read_text()
    assert "stuck" in said and "step 'committing'" in said
    assert "test_a_copier_stopped_long_into_its_commit_dumps_its_threads" in said
    # a step just begun, or between batches: nothing
    for doc, now in (({"step": "committing", "t": 1000.0}, 1001.0),
                     ({"step": "", "t": 1000.0}, 2000.0)):
        path.write_text(json.dumps(doc))
        assert not dump_if_stuck(str(path), now=now, out=io.StringIO())
    assert not dump_if_stuck(str(tmp_path / "none.json"), out=io.StringIO())
