"""ObserverProcess.serving: a batch written at each level since the latest start."""

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
