"""Managed OS processes: the load generators and the streaming observer.

A :class:`ManagedProcess` starts a command with its output appended to a log file, can
be killed with a real signal and started again with the same command line (a restart
keeps the logical identity; the process itself works out its new session from what it
wrote before). The nemesis uses it for producer and observer kills.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from verifier.rundata.errors import VerifierError
from verifier.rundata.waiting import wait_until


class ProcessError(VerifierError):
    """A managed process could not be started or controlled."""


class ManagedProcess:
    def __init__(self, name: str, argv: list[str], log_path: Path,
                 env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self.env = dict(env or {})
        self.cwd = cwd
        self.starts = 0
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def start(self) -> int:
        if self.alive:
            raise ProcessError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        with open(self.log_path, "ab") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            log.write(f"--- {stamp} start #{self.starts}: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env}, cwd=self.cwd,
            )
        return self._proc.pid

    def send_signal(self, sig: signal.Signals) -> None:
        if not self.alive:
            raise ProcessError(f"{self.name} is not running (exit code {self.returncode})")
        assert self._proc is not None
        self._proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit; return its exit code."""
        if self._proc is None:
            raise ProcessError(f"{self.name} was never started")
        return wait_until(lambda: (self._proc.poll() is not None, self._proc.poll()),
                          timeout=timeout, what=f"{self.name} to exit",
                          expected="an exit code", interval=0.05)

    def kill(self) -> int:
        """SIGKILL: the process gets no chance to clean up."""
        self.send_signal(signal.SIGKILL)
        return self.wait(30)

    def terminate(self, timeout: float = 30) -> int | None:
        """SIGTERM (a clean stop), SIGKILL if it has not exited by ``timeout``."""
        if not self.alive:
            return self.returncode
        self.send_signal(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except VerifierError:
            return self.kill()

    def restart(self) -> int:
        """Start again with the same command line (after a kill or an exit)."""
        if self.alive:
            self.kill()
        return self.start()

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
