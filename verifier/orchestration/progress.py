"""Live progress during a run: phase, active faults, records sent and observed per mode.

On a terminal one status line is redrawn in place; otherwise (CI logs) a line is printed
every ``log_every`` seconds, so a long run never looks hung and a log stays short.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from verifier.rundata.history import HistoryTail  # noqa: F401 - the orchestrator's


class ProgressDisplay:
    """Calls ``snapshot()`` once a second and shows what it returns."""

    def __init__(self, snapshot: Callable[[], str], *, stream=None, log_every: float = 10.0):
        self._snapshot = snapshot
        self._stream = stream or sys.stderr
        self._tty = hasattr(self._stream, "isatty") and self._stream.isatty()
        self._log_every = log_every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._last_log = 0.0

    def __enter__(self) -> ProgressDisplay:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if not self._thread.is_alive():  # never started (or already stopped)
            return
        self._stop.set()
        self._thread.join(timeout=5)
        if self._tty:
            self._stream.write("\n")
            self._stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                line = self._snapshot()
            except Exception as exc:  # noqa: BLE001 - progress must never break a run
                line = f"(progress unavailable: {exc})"
            now = time.monotonic()
            if self._tty:
                self._stream.write("\r\x1b[2K" + line[:200])
                self._stream.flush()
            elif now - self._last_log >= self._log_every:
                self._last_log = now
                self._stream.write(line + "\n")
                self._stream.flush()


def snapshot(run) -> str:
    """The progress line of a running scenario (``run``: its ScenarioRun)."""
    sent = []
    for p in run.plans:
        t = run.tails[p.pid].poll()
        sent.append(f"{p.mode} {t.ok}ok/{t.info}?")
    from streaming.progress import read_progress

    seen = []
    for iso, short in (("read_committed", "rc"), ("read_uncommitted", "ru")):
        pr = read_progress(run.run_dir, iso)
        seen.append(f"{short} {pr.rows if pr else 0}")
    faults = ", ".join(run.nemesis.describe_active() if run.nemesis else []) or "none"
    elapsed = time.monotonic() - run.started_at
    from verifier.orchestration.live import live_line

    return (f"[{run.scenario.name} {elapsed:.0f}s] {run.clock.current or '-'} | "
            f"fault: {faults} | "
            f"sent {' '.join(sent)} | observed {' '.join(seen)} | "
            f"{live_line(run.run_dir, run.plans, run.sink)}")
