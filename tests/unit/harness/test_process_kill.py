"""process-kill with and without its ``mid-batch`` trigger: with it, the kill waits for a
pipeline driver to hold a batch partly written and not committed (its ``holding``
marker), at most ``within`` seconds, and is not applied if none comes; without it, the
kill is at once and its detail says in which state it found the driver. A fake process
stands in (the handler's own logic; the integration tier kills real drivers)."""

from __future__ import annotations

import threading
import time

import pytest

from verifier.harness.faults.kinds import FaultEnv, NotApplied, ScheduledFault
from verifier.harness.faults.kinds.process import start_process_kill
from verifier.rundata.pipelines import write_marker


class FakeDriver:
    def __init__(self, tmp_path, marker=True) -> None:
        self.name, self.pid, self.alive = "pipeline/x", 4242, True
        self.mid_batch_marker = tmp_path / "holding" if marker else None
        self.checkpoint = tmp_path / "checkpoint"
        (self.checkpoint / "commits").mkdir(parents=True)
        self.started_at_ms = int(time.time() * 1000) - 1000
        self.killed_mid_batch: bool | None = None

    def hold(self, batch: int | None = 3) -> None:
        write_marker(self.mid_batch_marker, batch, "foreachBatch")

    def kill(self) -> int:
        self.killed_mid_batch = bool(self.mid_batch_marker and self.mid_batch_marker.exists())
        self.alive = False
        return -9


def fault(**params) -> ScheduledFault:
    return ScheduledFault(1, "process-kill", {"process": "pipeline/x"}, 0.0, 1.0, params)


def kill(proc, **params) -> dict:
    return start_process_kill(fault(**params), FaultEnv("b:1", processes={"pipeline/x": proc}),
                              {})


def test_the_triggered_kill_lands_while_a_batch_holds(tmp_path):
    proc = FakeDriver(tmp_path)
    proc.batch_offsets = lambda batch: 120 if batch == 3 else None
    timer = threading.Timer(0.3, proc.hold)
    timer.start()
    try:
        detail = kill(proc, trigger="mid-batch", within=5)
    finally:
        timer.cancel()
    assert proc.killed_mid_batch is True
    assert detail["mid_batch"] is True and detail["waited_s"] >= 0.25
    assert detail["trigger"] == "mid-batch" and detail["batch"] == 3
    assert detail["batch_offsets"] == 120 and detail["batch_in_flight"] is True


def test_no_batch_within_the_limit_leaves_the_process_alone(tmp_path):
    proc = FakeDriver(tmp_path)
    t0 = time.monotonic()
    with pytest.raises(NotApplied, match=r"mid-batch did not come within 0.3 s"):
        kill(proc, trigger="mid-batch", within=0.3)
    assert proc.alive is True and proc.killed_mid_batch is None  # not killed anyway
    assert time.monotonic() - t0 >= 0.3


def test_a_marker_left_by_a_killed_predecessor_is_no_trigger(tmp_path):
    proc = FakeDriver(tmp_path)
    proc.hold()
    proc.started_at_ms = int(time.time() * 1000) + 1000  # restarted after the marker
    with pytest.raises(NotApplied, match="no batch held"):
        kill(proc, trigger="mid-batch", within=0.3)
    assert proc.alive is True


def test_a_marker_of_a_committed_batch_is_no_trigger(tmp_path):
    proc = FakeDriver(tmp_path)
    proc.hold(batch=3)
    (proc.checkpoint / "commits" / "3").write_text("v1\n{}\n")
    with pytest.raises(NotApplied):
        kill(proc, trigger="mid-batch", within=0.3)


def test_an_empty_batch_is_no_trigger(tmp_path):
    proc = FakeDriver(tmp_path)
    proc.batch_offsets = lambda batch: 0  # batch 0 of a fresh query, before any record
    proc.hold(batch=0)
    with pytest.raises(NotApplied, match="batch 0 held, but it is empty"):
        kill(proc, trigger="mid-batch", within=0.3)
    assert proc.alive is True


def test_a_driver_that_cannot_say_is_not_applied_at_once(tmp_path):
    proc = FakeDriver(tmp_path, marker=False)
    t0 = time.monotonic()
    with pytest.raises(NotApplied, match="does not say when it is mid-batch"):
        kill(proc, trigger="mid-batch", within=5)
    assert proc.alive is True and time.monotonic() - t0 < 1


def test_without_a_trigger_the_kill_is_at_once_and_says_in_which_state(tmp_path):
    proc = FakeDriver(tmp_path)
    proc.batch_in_flight = lambda: True  # planned, not committed, nothing written yet
    t0 = time.monotonic()
    detail = kill(proc)
    assert proc.alive is False and time.monotonic() - t0 < 1
    assert detail["mid_batch"] is False and detail["batch_in_flight"] is True
    assert "trigger" not in detail


def test_a_process_without_batches_is_killed_at_once(tmp_path):
    proc = FakeDriver(tmp_path, marker=False)
    detail = kill(proc)
    assert proc.alive is False and "mid_batch" not in detail
