"""Spark's own failures: a pipeline's executor, or a worker with its executors, SIGKILLed.

    [[faults]]
    kind = "executor-kill"                  # or "worker-kill"
    target = { process = "pipeline" }      # every pipeline under test, one fault each
    start = 20
    duration = 3
    params = { trigger = "mid-batch", within = 240 }

They need the pipelines on the Spark standalone cluster the run starts (``verifier chaos
--spark-cluster standalone``, verifier.harness.spark_standalone), whose executor JVMs run
on this machine. With the ``mid-batch`` trigger the run holds each batch partway through
a task (streaming.pipelines.hold, ``task``: partition 0's task has let rows through to the
sink), and the kill waits for that: ``executor-kill`` SIGKILLs the executor running the
held task, ``worker-kill`` the worker that launched it and every executor of that worker.
Without a trigger they act at once on the pipeline application's first executor.

``executor-kill`` is healed by Spark itself: the master starts a new executor for the
application, and the scheduler re-runs the lost task there; the heal records the
application's executors then. ``worker-kill`` is healed by starting the worker again
(same ports); its executors come back with it. The start detail names the application,
the executor (id, pid), the worker, the task held (stage, partition, attempt, rows it had
let through) and its batch; the exposure counts from it (verifier.judge.faults.spark).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from verifier.harness.faults.kinds.base import Kind, NotApplied, ScheduledFault, process_target
from verifier.harness.faults.kinds.process import batch_state, heal_process_kill, not_serving
from verifier.harness.faults.probes import probe_mid_batch
from verifier.harness.faults.triggers import Gate, NotTriggered
from verifier.harness.spark_standalone import WORKER_PREFIX, Executor, executor_of, executors
from verifier.judge.faults.spark import FAMILY
from verifier.rundata.pipelines import parse_marker

#: (application, task attempt id) of every held task whose executor a kill took: its
#: marker stays behind (the hold never ended), and a second kill must wait for a new hold
_KILLED: set[tuple[str, object]] = set()


def _pipeline(fault: ScheduledFault, env):
    name = fault.target["process"]
    proc = env.processes.get(name)
    if proc is None or getattr(proc, "where", None) is None:
        raise NotApplied(f"{fault.kind} targets a pipeline under test, not {name!r}")
    return name, proc


def app_of(proc) -> str | None:
    """The application id of a pipeline driver's latest start (its ready.json)."""
    try:
        return json.loads(Path(proc.where.ready).read_text()).get("app")
    except (OSError, ValueError, AttributeError):
        return None


def _executor_detail(e: Executor) -> dict:
    return {"app": e.app, "executor": e.executor_id, "executor_pid": e.pid,
            "worker_pid": e.worker}


def probe_task_hold(proc) -> tuple[dict | None, str]:
    """(the held task and its executor, or None; why not): the driver mid-batch with a
    task hold (a marker ``where`` = ``task``) whose Python worker an executor JVM runs."""
    found, why = probe_mid_batch(proc)
    if found is None:
        return None, why
    if found.get("hold") != "task":
        return None, f"the batch holds in {found.get('hold')}, not inside a task"
    try:
        marker = parse_marker(Path(proc.mid_batch_marker).read_text())
    except OSError:
        marker = None
    if marker is None:
        return None, "the hold ended"
    e = executor_of(int(marker.get("pid") or 0))
    if e is None:
        return None, ("the held task runs in no executor JVM of this machine (local "
                      "mode? --spark-cluster standalone runs the pipelines on executors)")
    task = {k: marker.get(k) for k in ("stage", "partition", "attempt", "task")}
    if (e.app, task["task"]) in _KILLED:
        return None, "the held task's executor was killed already; waiting for a new hold"
    return {**found, **_executor_detail(e), "task": task,
            "rows_written": marker.get("rows")}, ""


def _first_executor(name: str, proc) -> dict:
    """Untriggered: the pipeline application's first executor running now."""
    app = app_of(proc)
    mine = sorted((e for e in executors() if e.app == app),
                  key=lambda e: int(e.executor_id) if e.executor_id.isdigit() else 0)
    if app is None or not mine:
        raise NotApplied(f"{name} has no executor running (application {app})")
    return {**_executor_detail(mine[0]), **batch_state(proc)}


def _sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _start(fault: ScheduledFault, env, gate: Gate | None, kill) -> dict:
    name, proc = _pipeline(fault, env)
    trigger = fault.trigger
    if trigger is None:
        return kill(name, _first_executor(name, proc))
    gate = gate or Gate()
    try:
        return gate.until(trigger, lambda: probe_task_hold(proc),
                          lambda found: kill(name, {**found, "batch_in_flight": True}))
    except NotTriggered as exc:
        raise NotApplied(str(exc)) from None


def start_executor_kill(fault: ScheduledFault, env, state: dict,
                        gate: Gate | None = None) -> dict:
    """SIGKILL the executor (at its trigger: the one running the held task)."""
    def kill(name: str, found: dict) -> dict:
        if not Path(f"/proc/{found['executor_pid']}").exists():
            raise NotApplied(f"executor {found['executor']} of {found['app']} is gone")
        _sigkill(found["executor_pid"])
        _KILLED.add((found["app"], (found.get("task") or {}).get("task")))
        state["app"] = found["app"]
        return {"process": name, "signal": "SIGKILL", **found}

    return _start(fault, env, gate, kill)


def heal_executor_kill(fault: ScheduledFault, env, state: dict) -> dict:
    """Spark heals it: the application's executors now (a new one replaces the lost)."""
    now = sorted(e.executor_id for e in executors() if e.app == state["app"])
    return {"app": state["app"], "executors": now}


def start_worker_kill(fault: ScheduledFault, env, state: dict,
                      gate: Gate | None = None) -> dict:
    """SIGKILL the worker (at its trigger: the one whose executor runs the held task) and
    every executor it launched."""
    def kill(name: str, found: dict) -> dict:
        worker = next((p for p in env.processes.values()
                       if str(getattr(p, "name", "")).startswith(WORKER_PREFIX)
                       and getattr(p, "pid", None) == found["worker_pid"]), None)
        if worker is None or not worker.alive:
            raise NotApplied(f"the worker (pid {found['worker_pid']}) of executor "
                               f"{found['executor']} is not one this run started and runs")
        lost = [e for e in executors() if e.worker == worker.pid]
        worker.kill()
        for e in lost:
            _sigkill(e.pid)
        _KILLED.add((found["app"], (found.get("task") or {}).get("task")))
        state["process"] = worker.name  # the heal (and the heal-all) start it again
        return {"process": name, "worker": worker.name, "signal": "SIGKILL", **found,
                "executors_lost": [{"app": e.app, "executor": e.executor_id, "pid": e.pid}
                                   for e in lost]}

    return _start(fault, env, gate, kill)


def heal_worker_kill(fault: ScheduledFault, env, state: dict) -> dict:
    return {"worker": state["process"], **heal_process_kill(fault, env, state)}


def _kind(name: str, start, heal) -> Kind:
    return Kind(name, FAMILY, start, heal, process_target, triggers=("mid-batch",),
                not_ready=not_serving)


KINDS = (_kind("executor-kill", start_executor_kill, heal_executor_kill),
         _kind("worker-kill", start_worker_kill, heal_worker_kill))
