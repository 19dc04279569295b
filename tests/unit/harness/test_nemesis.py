"""The nemesis on real OS processes (no Kafka): history events, identical event lists
for the same seed, and a heal-all that runs on errors too."""

from __future__ import annotations

import json
import sys

import pytest

from verifier.harness.faults.kinds import FaultEnv
from verifier.harness.faults.nemesis import Nemesis
from verifier.harness.faults.spec import build_schedule, parse_spec
from verifier.harness.faults.targets import ProcessTarget
from verifier.harness.procs import ManagedProcess
from verifier.rundata.errors import UsageError

SPECS = [
    {"kind": "producer-kill", "target": {"process": "gen-0"}, "start": [0, 0.3],
     "duration": [0.2, 0.4]},
    {"kind": "observer-kill", "target": {"process": "observer"}, "start": [0, 0.3],
     "duration": 0.2},
]


def _sleeper(tmp_path, name: str) -> ManagedProcess:
    return ManagedProcess(name, [sys.executable, "-c", "import time; time.sleep(120)"],
                          tmp_path / f"{name}.log")


@pytest.fixture
def procs(tmp_path):
    ps = {n: _sleeper(tmp_path, n) for n in ("gen-0", "observer")}
    for p in ps.values():
        p.start()
    yield ps
    for p in ps.values():
        p.terminate(timeout=5)


def _events(path):
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    return lines[0], [{k: v for k, v in e.items() if k not in ("t", "detail")}
                      for e in lines[1:]], lines[1:]


def _run(tmp_path, procs, seed, name):
    schedule = build_schedule([parse_spec(s, "s") for s in SPECS], seed=seed, run_seconds=2)
    path = tmp_path / f"{name}.jsonl"
    with Nemesis(schedule, FaultEnv("unused:9092", processes=procs), path, "run-1") as n:
        n.wait_done(timeout=10)
    return path


def test_process_kills_recorded_and_identical_for_the_same_seed(tmp_path, procs):
    assert all(isinstance(p, ProcessTarget) for p in procs.values())
    pids = {n: p.pid for n, p in procs.items()}
    header, first, raw = _events(_run(tmp_path, procs, 7, "a"))
    assert header == {"type": "header", "format": "nemesis-history", "version": 1,
                      "run": "run-1", "seed": 7}
    starts = [e for e in raw if e["f"] == "start" and e["type"] == "ok"]
    assert {e["detail"]["signal"] for e in starts} == {"SIGKILL"}
    assert {e["detail"]["exit"] for e in starts} == {-9}  # really killed by the signal
    assert all(p.alive and p.pid != pids[n] for n, p in procs.items())  # restarted
    assert [(e["type"], e["f"]) for e in first[-2:]] == [("invoke", "heal"), ("ok", "heal")]
    _, second, _ = _events(_run(tmp_path, procs, 7, "b"))
    assert first == second
    _, other, _ = _events(_run(tmp_path, procs, 8, "c"))
    assert len(other) == len(first)


def test_heal_all_runs_when_the_run_fails(tmp_path, procs):
    spec = parse_spec({"kind": "producer-kill", "target": {"process": "gen-0"}, "start": 0,
                       "duration": 30}, "s")
    schedule = build_schedule([spec], seed=1, run_seconds=60)
    path = tmp_path / "n.jsonl"
    with pytest.raises(RuntimeError, match="boom"):
        with Nemesis(schedule, FaultEnv("unused:9092", processes=procs), path, "r"):
            from verifier.rundata.waiting import wait_until
            wait_until(lambda: (not procs["gen-0"].alive, None), timeout=10,
                       what="the kill", expected="gen-0 dead")
            raise RuntimeError("boom")
    assert procs["gen-0"].alive  # restarted by the heal-all
    _, events, raw = _events(path)
    assert ("ok", "heal", 1) in [(e["type"], e["f"], e["id"]) for e in events]
    assert raw[-1]["fault"] == "all" and raw[-1]["type"] == "ok"


def test_missing_parts_are_refused_before_anything_starts(tmp_path):
    spec = parse_spec({"kind": "ack-loss", "target": {"node": 1}, "start": 0, "duration": 1,
                       "params": {"next": 1}}, "s")
    with pytest.raises(UsageError, match="need a proxy"):
        Nemesis(build_schedule([spec], 1, 5), FaultEnv("x:1"), tmp_path / "n.jsonl", "r")
    spec = parse_spec({"kind": "producer-kill", "target": {"process": "p"}, "start": 0,
                       "duration": 1}, "s")
    with pytest.raises(UsageError, match="unknown processes"):
        Nemesis(build_schedule([spec], 1, 5), FaultEnv("x:1"), tmp_path / "n.jsonl", "r")
    assert not (tmp_path / "n.jsonl").exists()


class _Observer(ManagedProcess):
    """A sleeper that serves once ``ready`` is set (the observer: a batch since its start)."""

    def __init__(self, tmp_path, ready):
        super().__init__("observer", [sys.executable, "-c", "import time; time.sleep(120)"],
                         tmp_path / "observer.log")
        self.ready = ready

    def served_for_s(self) -> float | None:
        return 0.0 if self.ready.is_set() else None


def _observer_kill(tmp_path, proc, limit):
    spec = parse_spec({"kind": "observer-kill", "target": {"process": "observer"},
                       "start": 0.2, "duration": 0.3}, "s")
    path = tmp_path / "held.jsonl"
    with Nemesis(build_schedule([spec], seed=1, run_seconds=2),
                 FaultEnv("unused:9092", processes={"observer": proc}), path, "r",
                 defer_limit_s=limit) as n:
        n.wait_done(timeout=20)
    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    return {(e["f"], e["type"]): e for e in lines if e["fault"] == "observer-kill"}


def test_a_kill_waits_until_the_process_serves_and_its_heal_moves_with_it(tmp_path):
    """Planned 0.2 s in, the kill waits (without blocking the schedule for longer than the
    process takes) until the observer serves ~1.5 s later; the fault keeps its 0.3 s."""
    import threading

    ready = threading.Event()
    proc = _Observer(tmp_path, ready)
    proc.start()
    first = proc.pid
    timer = threading.Timer(1.5, ready.set)
    timer.start()
    try:
        ev = _observer_kill(tmp_path, proc, limit=30)
    finally:
        timer.cancel()
        proc.terminate(timeout=5)
    start, heal = ev[("start", "ok")], ev[("heal", "ok")]
    assert start["detail"]["pid"] == first and start["detail"]["exit"] == -9
    assert 1.0 <= start["detail"]["held_back_s"] <= 3.0, start
    assert (start["detail"]["held_back_because"]
            == "observer has not written a batch since its start")
    assert start["t"] - ev[("start", "invoke")]["t"] < 1000  # killed once it served
    assert 250 <= heal["t"] - start["t"] <= 1500  # the heal moved with the start
    assert heal["detail"]["pid"] != first


def test_a_process_that_never_serves_is_killed_at_the_limit_and_says_so(tmp_path):
    import threading

    proc = _Observer(tmp_path, threading.Event())
    proc.start()
    try:
        ev = _observer_kill(tmp_path, proc, limit=1.0)
    finally:
        proc.terminate(timeout=5)
    start = ev[("start", "ok")]
    assert 1.0 <= start["detail"]["held_back_s"] <= 2.5, start
    assert start["detail"]["held_back_because"].endswith("s anyway)"), start
    assert start["detail"]["exit"] == -9


def test_a_process_without_a_serving_signal_is_killed_on_time(tmp_path, procs):
    """The generators (and the default schedule above) have no ``served_for_s``: nothing is
    held back and no ``held_back_s`` appears."""
    _, _, raw = _events(_run(tmp_path, procs, 7, "plain"))
    assert all("held_back_s" not in (e.get("detail") or {}) for e in raw)


def test_a_restarted_process_must_serve_a_while_before_the_next_kill(tmp_path, monkeypatch):
    """After a restart the kill waits until the process has served SERVING_MIN_S (the live
    counts move between two kills); a first start is killed as soon as it serves."""
    import threading
    import time

    from verifier.harness.faults.kinds import process

    monkeypatch.setattr(process, "SERVING_MIN_S", 1.5)

    class Serving(_Observer):  # serves from its start
        def served_for_s(self) -> float | None:
            return time.time() - self.started_at_ms / 1000

    ready = threading.Event()
    first = Serving(tmp_path, ready)
    first.start()
    try:
        ev = _observer_kill(tmp_path, first, limit=30)
    finally:
        first.terminate(timeout=5)
    assert "held_back_s" not in ev[("start", "ok")]["detail"]  # served since 0.0 s: on time

    (tmp_path / "again").mkdir()
    again = Serving(tmp_path / "again", ready)
    again.start()
    again.terminate(timeout=5)
    again.start()  # a restart, serving since now
    try:
        ev = _observer_kill(tmp_path / "again", again, limit=30)
    finally:
        again.terminate(timeout=5)
    start = ev[("start", "ok")]
    assert start["detail"]["held_back_because"] == (
        "observer has served less than 2 s since its restart"), start
    assert 0.8 <= start["detail"]["held_back_s"] <= 3.0, start


def test_two_held_back_kills_of_one_process_go_one_after_the_other(tmp_path, monkeypatch):
    """Both kills wait for the observer; the first that goes kills it, and the other, due
    while it is down (its heal restarts it 1 s later), waits for the restart to serve
    instead of failing on a dead process (a 6-minute soak: every column UNKNOWN)."""
    import threading
    import time

    class Slow(_Observer):  # serves 0.5 s after each start, once ready
        def served_for_s(self) -> float | None:
            served = (time.time() * 1000 - self.started_at_ms - 500) / 1000
            return served if self.ready.is_set() and served > 0 else None

    from verifier.harness.faults.kinds import process

    monkeypatch.setattr(process, "SERVING_MIN_S", 0.5)
    ready = threading.Event()
    proc = Slow(tmp_path, ready)
    proc.start()
    timer = threading.Timer(1.0, ready.set)
    timer.start()
    specs = [parse_spec({"kind": "observer-kill", "target": {"process": "observer"},
                         "start": at, "duration": 1.0}, "s") for at in (0.2, 0.4)]
    path = tmp_path / "two.jsonl"
    try:
        with Nemesis(build_schedule(specs, seed=1, run_seconds=3),
                     FaultEnv("unused:9092", processes={"observer": proc}), path, "r",
                     defer_limit_s=30) as n:
            n.wait_done(timeout=30)
    finally:
        timer.cancel()
        proc.terminate(timeout=5)
    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    starts = [e for e in lines if e["f"] == "start"]
    assert [e["type"] for e in starts] == ["invoke", "ok", "invoke", "ok"], starts
    first, second = starts[1]["detail"], starts[3]["detail"]
    assert second["pid"] != first["pid"]  # the restarted observer, once it served
    assert second["held_back_s"] > first["held_back_s"]


def _timeline(path):
    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    t0 = min(e["t"] for e in lines)
    return {(e["f"], e["type"], e["id"]): e | {"s": (e["t"] - t0) / 1000} for e in lines
            if e["id"]}


def _producer_then_observer_kill(tmp_path, procs, monkeypatch, start=None, heal=None,
                                 observer_at=0.5, name="two"):
    """A 0.2-s producer kill at 0 (its start or heal handler replaced) and a 0.5-s
    observer kill at ``observer_at``, run to the end; the history by (f, type, id)."""
    from dataclasses import replace

    from verifier.harness.faults import kinds

    kind = kinds.KINDS["producer-kill"]
    monkeypatch.setitem(kinds.KINDS, "producer-kill",
                        replace(kind, start=start or kind.start, heal=heal or kind.heal))
    specs = [parse_spec({"kind": "producer-kill", "target": {"process": "gen-0"},
                         "start": 0.0, "duration": 0.2}, "s"),
             parse_spec({"kind": "observer-kill", "target": {"process": "observer"},
                         "start": observer_at, "duration": 0.5}, "s")]
    path = tmp_path / f"{name}.jsonl"
    with Nemesis(build_schedule(specs, seed=1, run_seconds=3),
                 FaultEnv("unused:9092", processes=procs), path, "r") as n:
        n.wait_done(timeout=20)
        active = dict(n.active)
    return _timeline(path), active


def test_a_settling_heal_does_not_hold_back_the_faults_planned_meanwhile(
        tmp_path, procs, monkeypatch):
    """A heal whose target takes a while to come back (a broker restart: kinds.Settling)
    is waited for off the schedule: the next fault starts on time, and the heal's ok line
    comes when the target is back (the combined scenario's producer and observer kills,
    planned during the broker's restart, had started 15 s late and healed at once)."""
    import time

    from verifier.harness.faults import kinds

    heal = kinds.KINDS["producer-kill"].heal

    def slow_heal(fault, env, state):
        detail = heal(fault, env, state)
        return kinds.Settling(detail, lambda: (time.sleep(1.5), {"ready_seconds": 1.5})[1])

    ev, active = _producer_then_observer_kill(tmp_path, procs, monkeypatch, heal=slow_heal)
    assert not active  # the settled heal took its fault off the active list
    settled = ev[("heal", "ok", 1)]
    assert settled["detail"] == {"process": "gen-0", "pid": procs["gen-0"].pid,
                                 "ready_seconds": 1.5}
    assert settled["s"] - ev[("heal", "invoke", 1)]["s"] >= 1.4
    assert ev[("start", "ok", 2)]["s"] < 1.0  # on time, during the settling heal
    assert "late_s" not in ev[("start", "ok", 2)]["detail"]
    assert 0.4 <= ev[("heal", "ok", 2)]["s"] - ev[("start", "invoke", 2)]["s"] <= 1.5


def test_a_late_start_keeps_its_duration_and_says_how_late(tmp_path, procs, monkeypatch):
    """A start held up by a slow action before it (1.5 s here) moves its heal as far: the
    fault is still 0.5 s long, and its ok line has ``late_s``."""
    import time

    from verifier.harness.faults import kinds

    start = kinds.KINDS["producer-kill"].start

    def slow_start(fault, env, state):
        time.sleep(1.5)
        return start(fault, env, state)

    ev, _ = _producer_then_observer_kill(tmp_path, procs, monkeypatch, start=slow_start,
                                         observer_at=0.3, name="late")
    late = ev[("start", "ok", 2)]
    assert 1.0 <= late["detail"]["late_s"] <= 2.5, late
    # its duration counts from the start's invoke (the kill itself may take a while on a
    # loaded machine: from the ok line the gap was 0.44 s at load 40)
    assert 0.45 <= ev[("heal", "ok", 2)]["s"] - ev[("start", "invoke", 2)]["s"] <= 1.5
