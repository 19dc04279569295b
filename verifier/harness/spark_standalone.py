"""A Spark standalone cluster the run starts: a master and two workers on 127.0.0.1.

    verifier chaos --spark-cluster standalone --pipeline kafka-sink,delta --scenario executor-loss

Started from the installed PySpark distribution (``bin/spark-class``, which execs the JVM:
the process the tool started *is* the JVM) on free ports the system hands out, each a
:class:`~verifier.harness.procs.ManagedProcess`: recorded in the run's ledger, dying with
the tool, stopped by PID with the run. The pipelines under test run there (the observer
and the tool's own verification stay in local mode): each pipeline's application gets one
executor of one core on each worker (``spark.cores.max`` 2, ``spark.executor.cores`` 1),
so a held task on one executor leaves the batch's other tasks the other one, and a lost
executor is replaced by the master on the worker whose core it freed. The cores are
scheduling slots: the machine's own cores are shared with everything else of the run.

What a fault needs to find and kill an executor, :func:`executors`: the executor JVMs
(``CoarseGrainedExecutorBackend``) on this machine, each with its application id,
executor id and worker (its parent process), from ``/proc``.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from verifier.harness.procs import ManagedProcess, parent_pid
from verifier.rundata.errors import VerifierError
from verifier.rundata.waiting import GiveUp, wait_until

#: the process names of the cluster's parts in a run (fault targets: ``spark-worker/1``)
MASTER_NAME = "spark-master"
WORKER_PREFIX = "spark-worker"
WORKERS = 2
#: a worker's memory for executors, and one executor's heap: the pipelines' executors
#: read a few hundred records a batch; three pipelines' executors fit one worker
EXECUTOR_MEMORY = "640m"
DAEMON_MEMORY = "384m"  # the master's and each worker's own heap (SPARK_DAEMON_MEMORY)
#: a JVM start each, then the workers' registration, on a loaded 2-core machine
READY_TIMEOUT = 180.0
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports nobody listens on right now (the system hands them out)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def spark_class() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "bin" / "spark-class"


#: a task's attempts before its job (and the pipeline's query) fails: Spark's default 4
#: counts every lost executor and every Kafka fetch that timed out (the source's 2-s poll):
#: a run on the loaded 2-core machine lost its Kafka sink's query to four fetch timeouts
#: of one task before the first kill
TASK_MAX_FAILURES = 16


def pipeline_conf(workers: int = WORKERS) -> dict[str, str]:
    """The settings of a pipeline's application on the cluster: one executor of one core
    per worker, and room for the task failures the run causes."""
    return {"spark.cores.max": str(workers), "spark.executor.cores": "1",
            "spark.executor.memory": EXECUTOR_MEMORY,
            "spark.task.maxFailures": str(TASK_MAX_FAILURES)}


class StandaloneCluster:
    """A master and ``workers`` workers, each offering ``cores`` cores (one per pipeline:
    each pipeline's executor on it takes one) and memory for that many executors."""

    def __init__(self, folder: Path, cores: int = 1, workers: int = WORKERS,
                 env: dict | None = None) -> None:
        self.folder = Path(folder).absolute()  # the workers run in it: paths from here
        ports = free_ports(2 + 2 * workers)
        self.master_port, self.ui_port = ports[0], ports[1]
        self.url = f"spark://127.0.0.1:{self.master_port}"
        mb = int(EXECUTOR_MEMORY.rstrip("m"))
        base_env = {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
                    "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
                    # the executors' Python workers: this interpreter (PySpark, the project)
                    "PYSPARK_PYTHON": sys.executable, **(env or {})}
        cls = str(spark_class())
        self.master = ManagedProcess(
            MASTER_NAME, [cls, "org.apache.spark.deploy.master.Master", "--host",
                          "127.0.0.1", "--port", str(self.master_port), "--webui-port",
                          str(self.ui_port)],
            self.folder / "master.log", env=base_env, cwd=self.folder)
        self.workers: list[ManagedProcess] = []
        for i in range(workers):
            port, ui = ports[2 + 2 * i], ports[3 + 2 * i]
            work = self.folder / f"worker-{i + 1}"
            self.workers.append(ManagedProcess(
                f"{WORKER_PREFIX}/{i + 1}",
                [cls, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui), "--cores", str(cores),
                 "--memory", f"{mb * cores + 128}m", "--work-dir", str(work), self.url],
                self.folder / f"worker-{i + 1}.log", env=base_env, cwd=self.folder))

    @property
    def processes(self) -> dict[str, ManagedProcess]:
        """Every part by its process name (the master first)."""
        return {p.name: p for p in (self.master, *self.workers)}

    def start(self, timeout: float = READY_TIMEOUT) -> None:
        """Start the master, then the workers; return once every worker is ALIVE."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.master.start()
        for w in self.workers:
            w.start()
        self.wait_workers(len(self.workers), timeout)

    def status(self) -> dict:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/",
                                    timeout=5) as r:
            return json.loads(r.read())

    def wait_workers(self, n: int, timeout: float = READY_TIMEOUT) -> None:
        def registered():
            for p in self.processes.values():
                if p.starts and not p.alive and (p is self.master or n == len(self.workers)):
                    raise GiveUp(VerifierError(f"the Spark {p.name} exited "
                                               f"({p.returncode}):\n{p.log_tail(15)}"))
            alive = [w for w in self.status()["workers"] if w["state"] == "ALIVE"]
            return len(alive) >= n, f"{len(alive)} alive workers"

        wait_until(registered, timeout=timeout, what="the Spark standalone workers",
                   expected=f"{n} ALIVE workers in the master's /json/", interval=0.5)

    def stop(self, timeout: float = 20) -> None:
        """The workers (their executors exit with them), then the master; by PID."""
        for p in [*self.workers, self.master]:
            p.terminate(timeout=timeout)
        for e in executors():  # an executor a worker left behind (it should not)
            if e.worker in {w.pid for w in self.workers if w.pid}:
                _kill(e.pid)

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass(frozen=True)
class Executor:
    """An executor JVM on this machine."""

    pid: int
    app: str
    executor_id: str
    worker: int  # its parent process: the worker that launched it


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") \
            .split("\0")
    except OSError:
        return []


def parse_executor(pid: int, argv: list[str], ppid: int) -> Executor | None:
    """An executor's identity from its command line (pure), or None if not one."""
    if EXECUTOR_CLASS not in argv:
        return None

    def arg(name: str) -> str | None:
        return argv[argv.index(name) + 1] if name in argv[:-1] else None

    app, ex = arg("--app-id"), arg("--executor-id")
    if app is None or ex is None:
        return None
    return Executor(pid, app, ex, ppid)


def executors() -> list[Executor]:
    """Every executor JVM running on this machine."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        e = parse_executor(pid, _cmdline(pid), 0)
        if e is not None:
            out.append(Executor(e.pid, e.app, e.executor_id, parent_pid(pid)))
    return out


def executor_of(pid: int) -> Executor | None:
    """The executor JVM ``pid`` is, or runs (a Python worker of it: its daemon's parent),
    walking up at most three parents."""
    for _ in range(4):
        if pid <= 1:
            return None
        e = parse_executor(pid, _cmdline(pid), parent_pid(pid))
        if e is not None:
            return e
        pid = parent_pid(pid)
    return None


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


__all__ = ["EXECUTOR_CLASS", "Executor", "MASTER_NAME", "StandaloneCluster", "WORKERS",
           "WORKER_PREFIX", "executor_of", "executors", "free_ports", "parse_executor",
           "pipeline_conf"]
