"""Managed OS processes: the load generators and the streaming observer.

A :class:`ManagedProcess` starts a command with its output appended to a log file, can
be killed with a real signal and started again with the same command line (a restart
keeps the logical identity; the process itself works out its new session from what it
wrote before). The nemesis uses it for producer and observer kills.

Every child dies with the tool: :func:`spawn` forks each child from one long-lived
thread (Linux ties the parent-death signal, ``PR_SET_PDEATHSIG``, to the *thread* that
forked, and the nemesis restarts processes from its own short-lived thread) and sets that
signal to SIGKILL in the child. Every child is also recorded, with its start time, in the
run's *ledger* (a JSON file per tool process in the state folder) when one is active, so
:func:`cleanup_leftovers` can find and stop what a dead run left behind (a child that
changed its user, e.g. a broker under ``setpriv``, loses the parent-death signal).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from verifier.rundata.errors import ProcessError, VerifierError
from verifier.rundata.waiting import wait_until

PR_SET_PDEATHSIG = 1

#: the one thread every child is forked from (lives as long as the tool)
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verifier-spawner")
_LOCK = threading.Lock()
_LEDGER: Path | None = None
_LIVE: dict[int, subprocess.Popen] = {}  # every child started through spawn, by pid
#: set once the tool was asked to stop (SIGTERM, SIGINT, SIGHUP): waits get short
STOPPING = threading.Event()


def _die_with(parent: int):
    def preexec() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: the ledger still covers it
            return
        if os.getppid() != parent:  # the parent died between fork and prctl
            os._exit(137)
    return preexec


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22):
    a pid with the recorded start time is the very process, not a reused pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def _same_process(pid: int, start: int | None) -> bool:
    now = start_time(pid)
    if now is None:
        return False
    try:  # a zombie is gone already
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    except (OSError, IndexError):
        return False
    return start is None or now == start


def activate_ledger(state_dir: Path) -> Path:
    """Record every child this tool starts from now on in ``state_dir/ledger/<pid>.json``."""
    global _LEDGER
    folder = Path(state_dir) / "ledger"
    folder.mkdir(parents=True, exist_ok=True)
    _LEDGER = folder / f"{os.getpid()}.json"
    _write_ledger({"owner": {"pid": os.getpid(), "start": start_time(os.getpid())},
                   "children": [], "netns": []})
    return _LEDGER


def _read_ledger(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {"owner": {}, "children": [], "netns": []}


def _write_ledger(doc: dict) -> None:
    assert _LEDGER is not None
    tmp = _LEDGER.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, _LEDGER)


def record(kind: str, **fields) -> None:
    """Add an entry (``child`` or ``netns``) to this tool's ledger, if one is active."""
    with _LOCK:
        if _LEDGER is None:
            return
        doc = _read_ledger(_LEDGER)
        doc["children" if kind == "child" else kind].append(fields)
        _write_ledger(doc)


def release_ledger() -> None:
    """The run ended cleanly: its ledger is no longer needed."""
    global _LEDGER
    with _LOCK:
        if _LEDGER is not None:
            _LEDGER.unlink(missing_ok=True)
            _LEDGER = None


def spawn(name: str, argv: list[str], **popen_kwargs) -> subprocess.Popen:
    """Popen from the spawner thread, the child set to die with this process, and
    recorded in the ledger."""
    parent = os.getpid()

    def fork() -> subprocess.Popen:
        return subprocess.Popen(argv, preexec_fn=_die_with(parent), **popen_kwargs)

    proc = _SPAWNER.submit(fork).result()
    with _LOCK:
        _LIVE[proc.pid] = proc
        for pid in [p for p, pr in _LIVE.items() if pr.poll() is not None]:
            _LIVE.pop(pid)
    record("child", name=name, pid=proc.pid, start=start_time(proc.pid),
           group=bool(popen_kwargs.get("start_new_session")))
    return proc


def kill_all_now() -> None:
    """SIGKILL every live child (and its group, if it leads one): the second signal."""
    with _LOCK:
        procs = list(_LIVE.values())
    for proc in procs:
        if proc.poll() is None:
            _kill(proc.pid, group=os.getpgid(proc.pid) == proc.pid
                  if _alive(proc.pid) else False)


def parent_pid(pid: int) -> int:
    """``pid``'s parent from /proc (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a Spark driver's JVM, for one)."""
    return [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and parent_pid(int(e.name)) == pid]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def _kill(pid: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def cleanup_leftovers(state_dir: Path) -> list[str]:
    """Stop what tools that are no longer running left behind (by their ledgers in
    ``state_dir/ledger``); return one line per thing stopped."""
    folder = Path(state_dir) / "ledger"
    said: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        doc = _read_ledger(path)
        owner = doc.get("owner", {})
        if owner.get("pid") == os.getpid() or (
                owner.get("pid") and _same_process(owner["pid"], owner.get("start"))):
            continue  # a run still in progress (or this one)
        for child in doc.get("children", []):
            pid = child.get("pid")
            if pid and _same_process(pid, child.get("start")):
                _kill(pid, group=bool(child.get("group")))
                said.append(f"stopped {child.get('name')} (pid {pid}) of dead run "
                            f"{owner.get('pid')}")
        for ns in doc.get("netns", []):
            name = ns.get("name")
            if name and Path(f"/run/netns/{name}").exists():
                from verifier.harness.netns import NetNamespace
                NetNamespace(name).delete()
                said.append(f"removed network namespace {name} of dead run "
                            f"{owner.get('pid')}")
        path.unlink(missing_ok=True)
    return said


class ManagedProcess:
    def __init__(self, name: str, argv: list[str], log_path: Path,
                 env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self.env = dict(env or {})
        self.cwd = cwd
        self.starts = 0
        #: wall-clock ms of the latest start (what a process's own files can be compared to)
        self.started_at_ms: int | None = None
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
        self.started_at_ms = int(time.time() * 1000)
        with open(self.log_path, "ab") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            log.write(f"--- {stamp} start #{self.starts}: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._proc = spawn(
                self.name, self.argv, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env={**os.environ, **self.env}, cwd=self.cwd,
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
        """SIGTERM (a clean stop), SIGKILL if it has not exited by ``timeout`` (after
        :meth:`before_kill`, unless the tool itself is being stopped)."""
        if not self.alive:
            return self.returncode
        stopping = STOPPING.is_set()
        if stopping:  # the tool is being stopped: everything within 10 s
            timeout = min(timeout, 3.0)
        self.send_signal(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except VerifierError:
            if not stopping:
                self.before_kill(timeout)
            return self.kill() if self.alive else self.returncode

    def before_kill(self, waited: float) -> None:
        """What a process that did not stop within ``waited`` seconds of its SIGTERM leaves
        in its log before its SIGKILL (a subclass's thread dumps); nothing here."""

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
