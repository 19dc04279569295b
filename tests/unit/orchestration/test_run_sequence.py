"""RunSequence: each run's observer starts ahead, while the run before it is verified
(the first one's while the cluster starts), and a run started ahead that never runs is
discarded. ScenarioRun is replaced by a stand-in that records what was done to it."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from verifier.orchestration import orchestrator
from verifier.orchestration.orchestrator import RunSequence, spark_of
from verifier.orchestration.scenario import Scenario, Workload


class FakeRun:
    made: list[FakeRun] = []

    def __init__(self, env, scenario, opts, spark) -> None:
        self.scenario = scenario
        self.events: list[str] = []
        self.on_drained = None
        FakeRun.made.append(self)

    def prestart(self) -> None:
        if self.scenario.name == "broken":
            raise OSError("no room")
        self.events.append("prestart")

    def discard(self) -> None:
        self.events.append("discard")


@pytest.fixture(autouse=True)
def fake_runs(monkeypatch):
    FakeRun.made = []
    monkeypatch.setattr(orchestrator, "ScenarioRun", FakeRun)


def scenarios(*names: str) -> list[Scenario]:
    return [Scenario(name=n, description="", workload=Workload()) for n in names]


def test_each_observer_starts_while_the_run_before_is_verified():
    seq = RunSequence(None, scenarios("a", "b", "c"), None, None)
    assert [r.events for r in FakeRun.made] == [["prestart"]]  # before the cluster starts
    seen = []
    for run in seq:
        seen.append((run.scenario.name, list(run.events)))
        run.on_drained()  # the run's processes stopped: the next one's observer starts
    assert seen == [("a", ["prestart"]), ("b", ["prestart"]), ("c", ["prestart"])]
    assert len(FakeRun.made) == 3  # no run made twice
    seq.discard()
    assert all("discard" not in r.events for r in FakeRun.made)


def test_a_run_that_crashed_before_its_drain_leaves_the_next_to_start_its_own():
    seq = RunSequence(None, scenarios("a", "b"), None, None)
    runs = list(seq)  # nobody calls on_drained
    assert [r.events for r in runs] == [["prestart"], []]


def test_a_run_started_ahead_that_never_runs_is_discarded():
    seq = RunSequence(None, scenarios("a", "b"), None, None)
    first = next(iter(seq))
    first.on_drained()  # b starts ahead; then the matrix stops (a signal, a crash)
    seq.discard()
    assert FakeRun.made[1].events == ["prestart", "discard"]


def test_an_observer_that_cannot_start_ahead_is_left_to_its_run():
    seq = RunSequence(None, scenarios("broken", "b"), None, None)
    assert FakeRun.made[0].events == ["discard"]
    runs = list(seq)
    assert runs[0] is not FakeRun.made[0] and runs[0].events == []


def test_spark_of_resolves_a_session_still_starting():
    started: Future = Future()
    started.set_result("session")
    assert spark_of(started) == "session" and spark_of("as is") == "as is"
