"""process-kill waits for a pipeline driver to be mid-batch before the SIGKILL (its
``holding`` marker: a batch partly written, not committed), so the kill forces a replay.
A fake process stands in (this is the handler's own logic; the integration tier kills
real drivers)."""

from __future__ import annotations

import threading
import time

from verifier.harness.faults import actions
from verifier.harness.faults.actions import FaultEnv, start_process_kill
from verifier.harness.faults.spec import ScheduledFault


class FakeDriver:
    def __init__(self, marker) -> None:
        self.name, self.pid, self.alive = "pipeline/x", 4242, True
        self.mid_batch_marker = marker
        self.killed_mid_batch: bool | None = None

    def kill(self) -> int:
        self.killed_mid_batch = bool(self.mid_batch_marker and self.mid_batch_marker.exists())
        self.alive = False
        return -9


def fault() -> ScheduledFault:
    return ScheduledFault(1, "process-kill", {"process": "pipeline/x"}, 0.0, 1.0, {})


def test_the_kill_lands_while_a_batch_holds(tmp_path):
    proc = FakeDriver(tmp_path / "holding")
    timer = threading.Timer(0.3, proc.mid_batch_marker.touch)
    timer.start()
    try:
        detail = start_process_kill(fault(), FaultEnv("b:1", processes={"pipeline/x": proc}), {})
    finally:
        timer.cancel()
    assert proc.killed_mid_batch is True
    assert detail["mid_batch"] is True and detail["waited_s"] >= 0.25


def test_no_batch_in_time_kills_anyway_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(actions, "MID_BATCH_WAIT_S", 0.3)
    proc = FakeDriver(tmp_path / "holding")
    t0 = time.monotonic()
    detail = start_process_kill(fault(), FaultEnv("b:1", processes={"pipeline/x": proc}), {})
    assert proc.alive is False and proc.killed_mid_batch is False
    assert detail["mid_batch"] is False and time.monotonic() - t0 >= 0.3


def test_a_process_without_batches_is_killed_at_once(tmp_path):
    proc = FakeDriver(None)
    detail = start_process_kill(fault(), FaultEnv("b:1", processes={"pipeline/x": proc}), {})
    assert proc.alive is False and "mid_batch" not in detail


def test_the_detail_says_whether_a_batch_was_in_flight(tmp_path, monkeypatch):
    monkeypatch.setattr(actions, "MID_BATCH_WAIT_S", 0.1)
    proc = FakeDriver(tmp_path / "holding")
    proc.batch_in_flight = lambda: True  # planned, not committed, nothing written yet
    detail = start_process_kill(fault(), FaultEnv("b:1", processes={"pipeline/x": proc}), {})
    assert detail["mid_batch"] is False and detail["batch_in_flight"] is True
