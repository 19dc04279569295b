"""ObserverProcess.serving (a batch written at each level since the latest start) and
served_for_s (since the first batch at either level)."""

from __future__ import annotations

from streaming.progress import Progress, write_progress
from verifier.orchestration.observer_process import ObserverProcess


def _progress(run_dir, iso, t):
    write_progress(run_dir, Progress(isolation=iso, sink="exactly-once", batch=0,
                                     position={}, written={}, rows=0, t=t))


def test_serving_needs_both_levels_written_after_the_latest_start(tmp_path):
    obs = ObserverProcess(tmp_path, tmp_path / "config.json", tmp_path / "observer.log", {})
    assert not obs.serving()  # never started
    obs.started_at_ms = 1_000_000
    assert not obs.serving()  # no progress file yet
    _progress(tmp_path, "read_committed", 1_000_500)
    assert not obs.serving()  # one level only
    _progress(tmp_path, "read_uncommitted", 999_000)  # written by the previous start
    assert not obs.serving()
    _progress(tmp_path, "read_uncommitted", 1_000_001)
    assert obs.serving()
    obs.started_at_ms = 2_000_000  # restarted: the old files do not count
    assert not obs.serving()


def test_served_for_counts_from_the_first_batch_at_either_level(tmp_path, monkeypatch):
    import time

    obs = ObserverProcess(tmp_path, tmp_path / "config.json", tmp_path / "observer.log", {})
    assert obs.served_for_s() is None  # never started
    now = 2_000_000.0
    monkeypatch.setattr(time, "time", lambda: now)
    obs.started_at_ms = 1_000_000
    _progress(tmp_path, "read_committed", 999_000)  # the previous start's
    assert obs.served_for_s() is None
    _progress(tmp_path, "read_uncommitted", 1_000_200)  # one level is enough
    assert obs.served_for_s() == 2_000_000.0 - 1_000.2
    _progress(tmp_path, "read_uncommitted", 1_900_000)  # later batches: still the first
    assert obs.served_for_s() == 2_000_000.0 - 1_000.2
    obs.started_at_ms = 1_950_000  # restarted: counts from its own first batch
    assert obs.served_for_s() is None
    _progress(tmp_path, "read_committed", 1_960_000)
    assert obs.served_for_s() == 2_000_000.0 - 1_960.0
