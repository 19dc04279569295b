"""Process faults: a process of the run killed (restarted at the heal) or paused.

    producer-kill    a generator (target ``producer:<mode>`` or its process name)
    observer-kill    the streaming observer
    process-kill     any managed process: a generator, a pipeline's driver
    checkpoint-lost  a pipeline's driver killed and restarted on a fresh checkpoint (a
                     redeploy), the old one kept aside (verifier.rundata.pipelines)
    process-pause    SIGSTOP for the window, SIGCONT at the heal (a GC pause, a frozen
                     container, a generator stalled while the faults meant for it act)

The target is ``{"process": NAME}``. A kill of a process that is not serving yet is held
back (:func:`not_serving`); with a trigger (``mid-batch``, ``in-transaction``,
``batch-planned``, ``every-column``, ``copy-committed``) it waits for the state that makes it bite
(verifier.harness.faults.triggers, the probes in verifier.harness.faults.probes).
"""

from __future__ import annotations

import signal
import time

from verifier.harness.faults.kinds.base import (
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    process_target,
)
from verifier.harness.faults.probes import (
    probe_batch_planned,
    probe_copy_committed,
    probe_every_column,
    probe_in_transaction,
    probe_mid_batch,
)
from verifier.harness.faults.triggers import Gate, NotTriggered
from verifier.judge.faults.process import FAMILY

#: How long past its planned time the nemesis holds back a kill of a process that is not
#: serving yet (verifier.harness.faults.nemesis), and how often it looks again.
SERVING_DEFER_S = 120.0
SERVING_RECHECK_S = 0.5
#: How long a *restarted* process must have served before the next kill: the time the
#: live counts move between two kills (a first start is waited for by the load itself).
SERVING_MIN_S = 20.0

#: trigger -> (the process, the run's fault env, when the wait began in ms) -> (the state
#: found or None, why not)
PROBES = {"mid-batch": lambda proc, env, since_ms: probe_mid_batch(proc),
          "in-transaction": lambda proc, env, since_ms: probe_in_transaction(proc),
          "batch-planned": lambda proc, env, since_ms: probe_batch_planned(proc),
          "every-column": lambda proc, env, since_ms: probe_every_column(proc),
          "copy-committed": lambda proc, env, since_ms: probe_copy_committed(
              proc, env.proxy, since_ms)}


def not_serving(fault: ScheduledFault, env: FaultEnv) -> str | None:
    """Why a kill of ``fault``'s process would not hit it at work yet, or None.

    A process that says how long it has served (the observer: ``served_for_s``, batches
    written at either isolation level since its latest start) is killed once it has
    served, and after a restart once it has served SERVING_MIN_S. A kill while Spark is
    still starting tests no replay, and on a loaded 2-core machine (a 6-minute soak,
    2026-11-24, load ~20) the restarted observer took longer than the 90 s between two
    kills to write a batch, so the live counts stood still for 5 minutes; in a 20-minute
    soak a restart killed at its first batch again left them still for 10 minutes. Two
    kills held back at once go one after the other: the second waits for the restart the
    first one's heal makes to serve (it found the process dead and failed, and a fault
    that did not act leaves every column UNKNOWN)."""
    proc = env.processes.get(fault.target.get("process", ""))
    served_for = getattr(proc, "served_for_s", None)
    if proc is None or served_for is None:
        return None
    if not proc.alive:  # killed by another held-back kill that went first, not healed yet
        return f"{proc.name} is not running"
    served = served_for()
    if served is None:
        return f"{proc.name} has not written a batch since its start"
    if getattr(proc, "starts", 1) > 1 and served < SERVING_MIN_S:
        return f"{proc.name} has served less than {SERVING_MIN_S:.0f} s since its restart"
    return None


def batch_state(proc) -> dict:
    """For a process that says when it is mid-batch (a pipeline's driver), whether it is
    now (a batch partly written and not committed: a kill forces a replay of written
    output) and whether a batch is in flight at all (planned in its checkpoint, not
    committed: the restart re-runs it). Empty for other processes."""
    if getattr(proc, "mid_batch_marker", None) is None:
        return {}
    found, _ = probe_mid_batch(proc)
    detail = found or {"mid_batch": False}
    in_flight = getattr(proc, "batch_in_flight", None)
    if in_flight is not None:
        detail["batch_in_flight"] = detail["mid_batch"] or in_flight()
    return detail


def start_process_kill(fault: ScheduledFault, env: FaultEnv, state: dict,
                       gate: Gate | None = None) -> dict:
    """SIGKILL the process. With a trigger (``mid-batch``, ``in-transaction``) only once
    its state is seen, at most ``within`` seconds after the planned start (a process not
    running meanwhile may come back: it is waited for too); else the fault is not
    applied. Without one at once; the detail says in which state either way."""
    name = fault.target["process"]
    proc = env.processes.get(name)
    if proc is None:
        raise NotApplied(f"no process {name!r} in this run")
    trigger = fault.trigger

    def kill(found: dict) -> dict:
        if not proc.alive:
            raise NotApplied(f"process {name!r} is not running")
        pid = getattr(proc, "pid", None)
        state["process"] = name
        exit_code = proc.kill()
        return {"process": name, "pid": pid, "signal": "SIGKILL", "exit": exit_code, **found}

    if trigger is None:
        return kill(batch_state(proc) if proc.alive else {})
    probe = PROBES[trigger.name]
    gate = gate or Gate()
    since_ms = int(time.time() * 1000)
    try:
        return gate.until(trigger, lambda: probe(proc, env, since_ms), lambda found: kill(
            {**found, **({"batch_in_flight": True} if "mid_batch" in found else {})}))
    except NotTriggered as exc:
        raise NotApplied(str(exc)) from None


def heal_process_kill(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    name = state["process"]
    proc = env.processes[name]
    if not proc.alive:
        proc.restart()
    return {"process": name, "pid": getattr(proc, "pid", None)}


def heal_checkpoint_lost(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    """Restart the killed driver on a fresh checkpoint, as a redeploy with a new one does;
    the old checkpoint is moved aside (its batches stay evidence)."""
    name = state["process"]
    proc = env.processes[name]
    checkpoint, aside = getattr(proc, "checkpoint", None), getattr(proc, "lost_checkpoint", None)
    if checkpoint is None or aside is None:
        raise NotApplied(f"process {name!r} has no checkpoint to lose")
    moved = None
    if checkpoint.exists():
        moved = aside()
        checkpoint.rename(moved)
    if not proc.alive:
        proc.restart()
    return {"process": name, "pid": getattr(proc, "pid", None),
            "checkpoint_moved_to": str(moved) if moved else None}


def start_process_pause(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    """SIGSTOP the process (every thread of it: its client's network thread too)."""
    name = fault.target["process"]
    proc = env.processes.get(name)
    if proc is None:
        raise NotApplied(f"no process {name!r} in this run")
    if not proc.alive:
        raise NotApplied(f"process {name!r} is not running")
    proc.send_signal(signal.SIGSTOP)
    state["paused"] = name
    return {"process": name, "pid": getattr(proc, "pid", None), "signal": "SIGSTOP"}


def heal_process_pause(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    proc = env.processes[state["paused"]]
    if proc.alive:
        proc.send_signal(signal.SIGCONT)
    return {"process": state["paused"], "signal": "SIGCONT"}


def _kind(name: str, start, heal, triggers: tuple[str, ...] = ()) -> Kind:
    return Kind(name, FAMILY, start, heal, process_target, triggers=triggers,
                not_ready=not_serving)


KINDS = (
    _kind("producer-kill", start_process_kill, heal_process_kill,
          ("in-transaction", "copy-committed")),
    _kind("observer-kill", start_process_kill, heal_process_kill, ("every-column",)),
    _kind("process-kill", start_process_kill, heal_process_kill,
          ("mid-batch", "in-transaction", "batch-planned")),
    _kind("checkpoint-lost", start_process_kill, heal_checkpoint_lost, ("mid-batch",)),
    _kind("process-pause", start_process_pause, heal_process_pause),
)
