"""A PostgreSQL server for the pipelines whose sink is a database (issue 46): the
distribution's own (``apt-get install postgresql``), started by the tool in the run's
folder like the brokers and stopped with the run, or an existing one by URL
(``$VERIFIER_POSTGRES_URL``, a ``jdbc:postgresql://...`` URL; the tool then creates its
tables under the run's prefix and drops nothing).

The local server is one process (``postgres -D DIR``, in the run's process ledger, its
log in the run's logs), listening on 127.0.0.1 only, its data in a scratch folder of its
own (initdb, trust authentication for local connections), removed when it stops: it
lives as long as the run, and its rows are read back before. As root (PostgreSQL refuses
to run as root) its programs run as the distribution's ``postgres`` user, through
``setpriv``, which execs them: a SIGTERM reaches the server itself. That user must reach
its folder, which a run folder under a private parent (pytest's ``tmp_path``, 0700) does
not allow: hence a folder of its own in the system's temporary folder.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

from verifier.harness.procs import ManagedProcess
from verifier.rundata.errors import EnvironmentProblem
from verifier.rundata.waiting import wait_until

URL_ENV = "VERIFIER_POSTGRES_URL"
#: where Debian's packages put the server's programs (PATH has only the client's)
DEBIAN_BIN = Path("/usr/lib/postgresql")
READY_TIMEOUT = 60.0
USER = "postgres"


def server_bin() -> Path:
    """The folder of ``initdb`` and ``postgres``: on PATH, else Debian's newest version."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted((p for p in DEBIAN_BIN.glob("*/bin") if (p / "initdb").exists()),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not versions:
        raise EnvironmentProblem(
            "PostgreSQL is required by a pipeline that writes to it, but its server is not "
            "installed: `apt-get install postgresql` (or set VERIFIER_POSTGRES_URL to an "
            "existing server's jdbc:postgresql:// URL)")
    return versions[-1]


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "--", *argv]


def _give(path: Path) -> None:
    """The folder to the server's user (when the tool runs as root)."""
    if os.geteuid() == 0:
        shutil.chown(path, USER, USER)


class LocalPostgres:
    """One PostgreSQL server for a run: :meth:`prepare`, then :attr:`process` started
    like any process of the run, :meth:`wait_ready`, and a SIGTERM at the end."""

    def __init__(self, port: int, log: Path) -> None:
        import tempfile

        self.folder, self.port = Path(tempfile.mkdtemp(prefix="verifier-postgresql-")), port
        self.folder.chmod(0o755)
        self.data = self.folder / "data"
        self.sockets = self.folder / "sockets"
        self.bin = server_bin()
        argv = _as_server_user([str(self.bin / "postgres"), "-D", str(self.data),
                                "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                                "-c", f"unix_socket_directories={self.sockets}",
                                "-c", "fsync=off"])  # a run's scratch database
        self.process = ManagedProcess("postgresql", argv, log)

    @property
    def url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/postgres?user={USER}"

    def prepare(self) -> None:
        """initdb into the run's folder (once)."""
        if (self.data / "PG_VERSION").exists():
            return
        self.sockets.mkdir(exist_ok=True)
        for p in (self.folder, self.sockets):
            _give(p)
        cmd = _as_server_user([str(self.bin / "initdb"), "-D", str(self.data), "-U", USER,
                               "--auth=trust", "-E", "UTF8", "--no-sync"])
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            raise EnvironmentProblem(f"initdb failed ({done.returncode}): "
                                     f"{(done.stdout + done.stderr).strip()[-800:]}")

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        def probe():
            if not self.process.alive:
                raise EnvironmentProblem(f"PostgreSQL exited ({self.process.returncode}):\n"
                                         f"{self.process.log_tail(10)}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError as exc:
                return False, str(exc)
            ready = subprocess.run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p",
                                    str(self.port)], capture_output=True, check=False)
            return ready.returncode == 0, "not accepting connections yet"

        wait_until(probe, timeout=timeout, what="PostgreSQL to accept connections",
                   expected=f"pg_isready on 127.0.0.1:{self.port}", interval=0.2)


    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (a smart shutdown: the run's clients are gone by then), then the
        scratch folder goes."""
        self.process.terminate(timeout=timeout)
        shutil.rmtree(self.folder, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = ["URL_ENV", "LocalPostgres", "free_port", "server_bin"]
