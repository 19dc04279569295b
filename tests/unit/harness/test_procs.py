"""ManagedProcess with real (tiny) processes and real signals; no JVM."""

from __future__ import annotations

import sys

from verifier.harness.procs import ManagedProcess

LOOP = [sys.executable, "-c", "import time, sys; print('up', flush=True); time.sleep(60)"]


def test_kill_and_restart(tmp_path):
    p = ManagedProcess("loop", LOOP, tmp_path / "loop.log")
    first = p.start()
    assert p.alive
    assert p.kill() == -9
    assert not p.alive
    second = p.restart()
    assert second != first and p.alive and p.starts == 2
    assert p.terminate(timeout=10) == -15
    log = (tmp_path / "loop.log").read_text()
    assert log.count("start #") == 2


def test_exit_code_is_kept(tmp_path):
    argv = [sys.executable, "-c", "import sys; sys.exit(3)"]
    p = ManagedProcess("fail", argv, tmp_path / "f.log")
    p.start()
    assert p.wait(timeout=20) == 3
    assert p.returncode == 3 and not p.alive


def test_wait_until_stops_at_once_when_the_probe_gives_up():
    import time

    import pytest

    from verifier.rundata.errors import ClusterError
    from verifier.rundata.waiting import GiveUp, wait_until

    def probe():
        raise GiveUp(ClusterError("gone for good"))

    t0 = time.monotonic()
    with pytest.raises(ClusterError):
        wait_until(probe, timeout=30, what="x", expected="y")
    assert time.monotonic() - t0 < 5
