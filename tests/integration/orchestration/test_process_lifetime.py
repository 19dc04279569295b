"""Nothing a chaos run started outlives it (issue 17).

`verifier chaos --scenario baseline` runs as a subprocess on its own base port (slot
"lifetime" of tests/conftest.py) and state folder; once its generators produce, it is
SIGKILLed (no chance to clean up). Every process it had started (the whole descendant
tree, read from /proc just before the kill) and every port of its cluster and proxy must
be gone after `verifier cleanup`. A second case sends SIGTERM instead: the run must end
within 10 s, record that it was interrupted, and leave nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import port_base
from verifier.assess.facts import interrupted
from verifier.harness.cluster.processes import port_in_use
from verifier.rundata.errors import VerifierError
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.waiting import GiveUp, wait_until

#: a whole `verifier chaos` run of its own (issue 39): in the chaos tier, `make test-runs`
#: (CI's step after `make test`), not in `make test`
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

BASE_PORT = int(os.environ.get("VERIFIER_TEST_LIFETIME_BASE_PORT", port_base("lifetime")))
STATE_DIR = PROJECT_ROOT / ".state" / f"test-lifetime-{BASE_PORT}"
PORTS = [BASE_PORT + n for n in (1, 2, 3)] + [BASE_PORT + 300 + n for n in (0, 1, 2, 3)]


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def start_run(out: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "verifier", "chaos", "--scenario", "baseline",
            "--base-port", str(BASE_PORT), "--state-dir", str(STATE_DIR), "--out", str(out)]
    return subprocess.Popen(argv, cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for_load(proc: subprocess.Popen, out: Path, timeout: float = 240) -> None:
    """Until every generator of the run has written its history (load under way)."""
    def loading():
        if proc.poll() is not None:
            raise GiveUp(VerifierError(f"verifier chaos exited early:\n{proc.stdout.read()}"))
        histories = [h for h in out.glob("baseline/*/histories/*.jsonl") if h.stat().st_size]
        return len(histories) >= 4, f"{len(histories)} histories"

    wait_until(loading, timeout=timeout, what="the run's load phase",
               expected="a history from each of the 4 generators", interval=0.5)


def assert_nothing_left(pids: set[int]) -> None:
    def gone():
        left = [p for p in pids if alive(p)]
        ports = [p for p in PORTS if port_in_use(p)]
        return not left and not ports, f"pids {left}, ports {ports}"

    wait_until(gone, timeout=15, what="everything the run started to stop",
               expected="no process and no port left", interval=0.5)


def cleanup() -> str:
    done = subprocess.run([sys.executable, "-m", "verifier", "cleanup"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_sigkill_mid_load_leaves_nothing_after_cleanup(tmp_path):
    proc = start_run(tmp_path)
    try:
        wait_for_load(proc, tmp_path)
        started = descendants(proc.pid)
        assert len(started) >= 6  # 3 brokers, proxy, 4 generators, observer...
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        print(cleanup())
        assert_nothing_left(started)
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup()


def test_sigterm_ends_the_run_within_10s(tmp_path):
    proc = start_run(tmp_path)
    try:
        wait_for_load(proc, tmp_path)
        started = descendants(proc.pid)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        took = time.monotonic() - t0
        output = proc.stdout.read()
        assert took <= 10, f"took {took:.1f}s:\n{output}"
        assert proc.returncode == 130, output
        marks = list(tmp_path.glob("baseline/*/INTERRUPTED"))
        assert marks, output
        # the mark names the signal and the phase it broke off; analyze reads it
        assert marks[0].read_text().strip() == "SIGTERM during load+faults", output
        assert interrupted(marks[0].parent) == "SIGTERM during load+faults"
        assert_nothing_left(started)
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup()
