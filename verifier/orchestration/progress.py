"""Live progress during a run: phase, active faults, records sent and observed per mode.

On a terminal one status line is redrawn in place; otherwise (CI logs) a line is printed
every ``log_every`` seconds, so a long run never looks hung and a log stays short.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson


class HistoryTail:
    """Counts a producer history's send outcomes incrementally (reads only new bytes)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._pos = 0
        self._rest = b""
        self.ok = 0
        self.info = 0
        self.fail = 0

    def poll(self) -> HistoryTail:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return self
        self._pos += len(data)
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()  # a line still being written
        for line in lines:
            if b'"send"' not in line:
                continue
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if ev.get("f") == "send":
                kind = ev.get("type")
                if kind == "ok":
                    self.ok += 1
                elif kind == "info":
                    self.info += 1
                elif kind == "fail":
                    self.fail += 1
        return self


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
