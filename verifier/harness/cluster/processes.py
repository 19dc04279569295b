"""Facts about OS processes, read from /proc: alive, paused, which command line."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path


def proc_state(pid: int) -> str | None:
    """The one-letter state from /proc/<pid>/stat, or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # "pid (comm) S ..." - comm may contain spaces and parentheses; the state follows the last ")"
    return text.rsplit(")", 1)[1].split()[0]


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []
    return [p.decode(errors="replace") for p in raw.split(b"\0") if p]


def is_alive(pid: int | None, marker: str | None = None) -> bool:
    """True if ``pid`` runs (zombies count as dead) and, if given, its command line
    contains ``marker`` (a guard against PID reuse after a reboot or a long pause)."""
    if not pid:
        return False
    state = proc_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    return marker is None or any(marker in part for part in cmdline(pid))


def is_stopped(pid: int) -> bool:
    """True if the process is stopped by a signal (SIGSTOP)."""
    return proc_state(pid) in ("T", "t")


def signal_process(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True if something listens on host:port (we try to bind it ourselves)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False
