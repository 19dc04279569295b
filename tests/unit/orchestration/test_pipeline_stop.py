"""A pipeline's driver that ignores its SIGTERM: killed after the stop's wait, with its
Python threads and its JVM's (here a child standing in for the JVM) dumped into its log
first, and a note saying where (CI's stop 57: a Kafka-sink driver never answered its
SIGTERM and nothing said why). Real processes and signals; no JVM."""

from __future__ import annotations

import sys
import time

from verifier.orchestration.pipelines import PipelineProcess, stop

#: a driver whose main thread is stuck (as in a JVM call that never returns): the
#: SIGTERM handler of driver_process runs, but nothing ever looks at its event. Its child
#: answers SIGQUIT as a JVM does, with a dump on its output.
STUCK_DRIVER = """
import os, signal, subprocess, sys, threading
from streaming.session import driver_process
driver_process()
jvm = subprocess.Popen([sys.executable, "-c", '''
import os, signal, sys, time
signal.signal(signal.SIGQUIT, lambda *a: print("Full thread dump (stand-in JVM)", flush=True))
parent = os.getppid()
open(sys.argv[1], "w").write("up")
while os.getppid() == parent:  # gone with the driver, as PySpark's gateway JVM is
    time.sleep(0.1)
''', sys.argv[1]])
stuck = threading.Lock()
stuck.acquire()
stuck.acquire()  # never returns
"""


def test_a_driver_that_ignores_sigterm_is_killed_with_its_threads_in_its_log(tmp_path):
    plan = tmp_path / "run" / "pipelines.json"
    proc = PipelineProcess(tmp_path / "run", "stuck", plan, env={})
    up = tmp_path / "jvm-up"
    proc.argv = [sys.executable, "-c", STUCK_DRIVER, str(up)]
    proc.start()
    for _ in range(200):
        if up.exists():
            break
        time.sleep(0.05)
    assert up.exists(), proc.log_tail()

    notes = stop([proc], timeout=2)

    assert proc.returncode == -9
    assert notes == [f"pipeline/stuck did not stop within 2 s of its SIGTERM and was "
                     f"killed; its threads are in {proc.log_path}"]
    log = proc.log_path.read_text()
    assert "most recent call first" in log and "stuck.acquire()" in log, log  # Python
    assert "Full thread dump (stand-in JVM)" in log, log  # the JVM child's
    assert "no exit 2 s after SIGTERM" in log.splitlines()[-1], log
    # the stand-in JVM went with its driver: nothing of the test is left running
    for _ in range(50):
        if not _running("stand-in JVM"):
            break
        time.sleep(0.1)
    assert not _running("stand-in JVM")


def _running(text: str) -> bool:
    import subprocess

    return subprocess.run(["pgrep", "-f", text], capture_output=True).returncode == 0


def test_a_driver_that_stops_gets_no_dump(tmp_path):
    proc = PipelineProcess(tmp_path / "run", "clean", tmp_path / "run" / "p.json", env={})
    proc.argv = [sys.executable, "-c", "import time\nwhile True: time.sleep(0.1)"]
    proc.start()
    time.sleep(0.3)
    assert stop([proc], timeout=10) == [f"pipeline/clean exited -15: {proc.log_tail(3)}"]
    assert proc.stop_timed_out is None
    assert "thread dumps" not in proc.log_path.read_text()
