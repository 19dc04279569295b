"""ManagedProcess with real (tiny) processes and real signals; no JVM."""

from __future__ import annotations

import os
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


# ----- process lifetime (issue 17) ------------------------------------------------------

PARENT = """
import sys, threading, time
from pathlib import Path
from verifier.harness.procs import ManagedProcess, activate_ledger
activate_ledger(Path(sys.argv[1]))
p = ManagedProcess("loop", [sys.executable, "-c", "import time; time.sleep(60)"],
                   Path(sys.argv[1]) / "loop.log")
t = threading.Thread(target=p.start)  # a short-lived thread, as the nemesis restarts
t.start(); t.join()
print(p.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    from pathlib import Path
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float = 10) -> bool:
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_child_started_from_a_thread_that_ended_dies_with_its_parent(tmp_path):
    import subprocess

    from verifier.harness.procs import start_time
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _alive(child) and start_time(child)
    parent.kill()
    parent.wait(10)
    assert _wait_gone(child), "the child outlived its parent"


def test_cleanup_stops_what_a_dead_run_recorded(tmp_path):
    import json
    import subprocess

    from verifier.harness.procs import cleanup_leftovers, start_time
    # a process no tool of ours started with a parent-death signal: as a broker under
    # setpriv, which loses it
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              start_new_session=True)
    dead_owner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner.wait(10)
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    (ledger / f"{dead_owner.pid}.json").write_text(json.dumps({
        "owner": {"pid": dead_owner.pid, "start": 1},
        "children": [{"name": "broker-1", "pid": orphan.pid, "start": start_time(orphan.pid),
                      "group": True},
                     {"name": "reused", "pid": os.getpid(), "start": 1}],
        "netns": []}))
    said = cleanup_leftovers(tmp_path)
    assert said == [f"stopped broker-1 (pid {orphan.pid}) of dead run {dead_owner.pid}"]
    assert orphan.wait(10) == -9
    assert not list(ledger.iterdir())
    assert cleanup_leftovers(tmp_path) == []


def test_a_live_runs_ledger_is_left_alone(tmp_path):
    from verifier.harness.procs import activate_ledger, cleanup_leftovers, release_ledger
    path = activate_ledger(tmp_path)
    try:
        p = ManagedProcess("loop", LOOP, tmp_path / "loop.log")
        p.start()
        assert cleanup_leftovers(tmp_path) == [] and p.alive
        assert '"loop"' in path.read_text()
        p.terminate(10)
    finally:
        release_ledger()
    assert not path.exists()
