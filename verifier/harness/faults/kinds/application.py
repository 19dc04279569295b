"""Faults of the consumer applications under test (issue 47).

    instance-kill    SIGKILL an instance of each application (restarted at the heal)

The target is ``{"instance": I}`` (instance I of every application of the run) or
``{"app": NAME, "instance": I}``; instances are the processes ``app/<name>/<i>``
(verifier.rundata.apps). Just before each kill the instance's state file is read (what
the presets say they are doing: verifier.rundata.apps, producers.app_copier) and kept in
the start's detail: the exposure (verifier.judge.faults.application). With the trigger
``at-risk`` each instance is killed only once its state says it is between a batch's two
steps, at most ``within`` seconds after the planned start each, one after the other.
An instance whose state says the batch's second step has begun (``step``: ``writing``
or ``committing``) is not at risk: a kill then may or may not undo the batch (the Java
commit-before copier killed 0.29 s into its 200 ms window had begun writing and lost
nothing). After the SIGKILL the state file is read again: the last thing the instance
said before it died (``state_at_kill``), what the verdict counts.

The heal restarts each killed instance and then watches, for at most ``observe`` seconds
(default :data:`REJOIN_S`), until its group has taken it back (its state file written by
the new process, with partitions in it: a group hands partitions to a new member only
once the rebalances that take them from the others are done, eager or cooperative), or
until another fault acts on it or on its application's other instances (killed, or a new
process), so the count stops where the next fault's begins; its
``ok`` line, and the instances' snapshot with it (``owners``:
verifier.judge.faults.owners), come then. The rebalances a
kill causes happen after the restart (the group drops the dead member after its session
timeout and takes the new one in), so a snapshot at the restart itself counted none.
"""

from __future__ import annotations

import json
import time

from verifier.harness.faults.kinds.base import (
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    Settling,
)
from verifier.harness.faults.triggers import Gate, NotTriggered
from verifier.judge.faults.application import FAMILY, SECOND_STEPS
from verifier.rundata.apps import PROCESS_PREFIX
from verifier.rundata.errors import UsageError


def instance_target(target, node_ids, processes) -> None:
    """``{"instance": I}`` or ``{"app": NAME, "instance": I}``, an instance the run has
    (when ``processes`` is known)."""
    ok = isinstance(target, dict) and set(target) in ({"instance"}, {"app", "instance"})
    inst = target.get("instance") if isinstance(target, dict) else None
    if not ok or isinstance(inst, bool) or not isinstance(inst, int) or inst < 0 or \
            not isinstance(target.get("app", ""), str):
        raise UsageError(f"target must be {{\"instance\": I}} or {{\"app\": NAME, "
                         f"\"instance\": I}} (I >= 0), not {target!r}")
    if processes is not None and not matching(target, processes):
        known = sorted(p for p in processes if p.startswith(PROCESS_PREFIX + "/"))
        raise UsageError(f"no application instance matches {target!r}; known: {known} "
                         "(name the applications with --app)")


def matching(target: dict, names) -> list[str]:
    """The process names (``app/<name>/<i>``) a target names, sorted."""
    out = []
    for name in names:
        parts = name.split("/")
        if len(parts) != 3 or parts[0] != PROCESS_PREFIX:
            continue
        if parts[2] == str(target["instance"]) and target.get("app") in (None, parts[1]):
            out.append(name)
    return sorted(out)


def read_state(proc) -> dict | None:
    """What an instance says it is doing (its state file), or None."""
    path = getattr(proc, "state_file", None)
    try:
        return json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None


def owners(processes) -> dict[str, dict | None]:
    """What each application instance's state file says now (``app/<name>/<i>`` ->
    ``{pid, assigned, rebalances, alive}``, None: no state file): the nemesis keeps it
    with every fault's start and heal (verifier.judge.faults.owners reads the two)."""
    out: dict[str, dict | None] = {}
    for name, proc in sorted(processes.items()):
        if not name.startswith(PROCESS_PREFIX + "/"):
            continue
        state = read_state(proc)
        out[name] = None if state is None else {
            "pid": state.get("pid"), "assigned": list(state.get("assigned") or ()),
            "rebalances": state.get("rebalances"), "alive": bool(proc.alive)}
    return out


def rebalances(env: FaultEnv, names) -> dict[str, int | None]:
    """Process name -> the rebalances its state file says it saw (None: no file)."""
    out = {}
    for name in names:
        state = read_state(env.processes[name]) if name in env.processes else None
        out[name] = None if state is None else int(state.get("rebalances") or 0)
    return out


def idle_why(proc, state: dict) -> str:
    """Why an instance is not at risk, with what it last said (a missed trigger's
    evidence: no partitions means its group has not assigned it any since it joined)."""
    age = time.time() - float(state.get("t") or 0)
    return (f"{proc.name} is between batches (assigned {len(state.get('assigned') or ())} "
            f"partition(s), {state.get('rebalances', '?')} rebalance(s), its state "
            f"written {age:.1f} s before)")


def probe_at_risk(proc) -> tuple[dict | None, str]:
    if not proc.alive:
        return None, f"{proc.name} is not running"
    state = read_state(proc)
    if state is None:
        raise NotTriggered(f"{proc.name} keeps no state file to show a batch in")
    if int(state.get("at_risk") or 0) <= 0:
        return None, idle_why(proc, state)
    if state.get("step") in SECOND_STEPS:
        return None, f"{proc.name}'s batch is in its second step ({state['step']})"
    return {"state": state}, ""


#: what a triggered fault's record says when it acted at the planned time because the
#: instance keeps no state file (a user's own service): the trigger cannot see its batch
NO_STATE_FILE = ("no state file: acted at the planned time (the at-risk trigger cannot see "
                 "a batch in an instance that does not say what it is doing)")


def at_risk_each(fault: ScheduledFault, env: FaultEnv, names: list[str], gate: Gate,
                 act) -> list[dict]:
    """``act(name, found)`` on each instance: at once without a trigger, else when the
    trigger finds it at risk (``found``: what :func:`probe_at_risk` saw); an instance that
    keeps no state file at the planned time (a user's service that writes none) is acted
    on then, before the others' waits, its record saying so (``fallback``), not missed. Returns the
    instances missed, each with why (the kill's and the pause's one loop)."""
    missed = []
    blind = [n for n in names if fault.trigger is not None and env.processes[n].alive
             and read_state(env.processes[n]) is None]
    # the blind ones first, so each is acted on at the planned time, not after the others'
    # waits for their trigger
    for name in blind + [n for n in names if n not in blind]:
        proc = env.processes[name]
        try:
            if fault.trigger is None:
                act(name, {})
            elif name in blind:
                with gate.lock:  # as a trigger's act: nothing else acts meanwhile
                    act(name, {"trigger": fault.trigger.name, "waited_s": 0.0,
                               "fallback": NO_STATE_FILE})
            else:
                gate.until(fault.trigger, lambda p=proc: probe_at_risk(p),
                           lambda found, n=name: act(n, found))
        except (NotTriggered, NotApplied) as exc:
            missed.append({"process": name, "why": str(exc)})
    return missed


def start_instance_kill(fault: ScheduledFault, env: FaultEnv, state: dict,
                        gate: Gate | None = None) -> dict:
    names = matching(fault.target, env.processes)
    if not names:
        raise NotApplied(f"no application instance matches {fault.target!r}")
    killed = []
    gate = gate or Gate()

    def kill(name: str, found: dict) -> dict:
        proc = env.processes[name]
        if not proc.alive:
            raise NotApplied(f"process {name!r} is not running")
        seen = found.get("state", read_state(proc))
        exit_code = proc.kill()
        last = read_state(proc)  # the instance is dead: the last thing it said
        _, app, instance = name.split("/")
        entry = {"process": name, "app": app, "instance": int(instance),
                 "pid": getattr(proc, "pid", None), "exit": exit_code, "state": seen,
                 **({"state_at_kill": last} if last is not None and last != seen else {}),
                 **{k: v for k, v in found.items() if k != "state"}}
        killed.append(entry)
        return entry

    missed = at_risk_each(fault, env, names, gate, kill)
    state["processes"] = [k["process"] for k in killed]
    # what the heal's watch compares with: the pid each killed instance's file named, and
    # the process ids of its application's other instances at the kill
    state["pids"] = {k["process"]: (k.get("state_at_kill") or k.get("state") or {}).get("pid")
                     for k in killed}
    apps = {(PROCESS_PREFIX, k["app"]) for k in killed}
    others = [n for n in env.processes if n not in state["pids"]
              and tuple(n.split("/")[:2]) in apps and env.processes[n].alive]
    # the processes' own ids, not their files' (a file may be an earlier process's yet)
    state["stayed_pids"] = {n: getattr(env.processes[n], "pid", None) for n in others}
    if not killed:
        raise NotApplied("; ".join(m["why"] for m in missed), {"missed": missed})
    return {"signal": "SIGKILL", "killed": killed, **({"missed": missed} if missed else {})}


def heal_instance_kill(fault: ScheduledFault, env: FaultEnv, state: dict) -> Settling:
    restarted = []
    for name in state.get("processes", ()):
        proc = env.processes[name]
        if not proc.alive:
            proc.restart()
        restarted.append({"process": name, "pid": getattr(proc, "pid", None)})
    return Settling({"restarted": restarted}, lambda: _rejoined(fault, env, state))


#: how long a kill's heal watches for its group to settle after the restart: the presets
#: drop a dead member after their 10-s session timeout, and a JVM takes seconds to start
REJOIN_S = 30.0
LOOK_S = 0.2


def _rejoined(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    """Wait (at most ``observe`` s) until each restarted instance's state file is its new
    process's, with partitions (the instances that stayed up have then seen the
    rebalances that moved them); what is still awaited then (``rejoin_waiting``; an
    instance its group gives no partition, as a stateful Streams one warming up, keeps
    the watch to its end). Cut short when
    another fault acts on one of them first (dead, or a new process: ``rejoin_cut``), so
    the count stops where the next fault's begins."""
    t0 = time.monotonic()
    deadline = t0 + float(fault.action_params.get("observe", REJOIN_S))
    pids = state.get("pids") or {}
    stayed_pids = state.get("stayed_pids") or {}

    now_pids = {n: getattr(env.processes[n], "pid", None) for n in pids
                if n in env.processes}

    def cut() -> list[str]:
        """The watched instances another fault has acted on since: not running, or a
        new process (killed and restarted, stopped and started)."""
        out = []
        for name, pid in (now_pids | stayed_pids).items():
            proc = env.processes.get(name)
            if proc is not None and (not proc.alive or getattr(proc, "pid", None) != pid):
                out.append(name)
        return out

    def waiting() -> list[str]:
        out = []
        for name, old in pids.items():
            proc = env.processes.get(name)
            s = read_state(proc) if proc is not None and old is not None else None
            if proc is not None and old is not None and (
                    s is None or s.get("pid") == old or not s.get("assigned")):
                out.append(name)
        return out

    left, acted = waiting(), cut()
    while left and not acted and time.monotonic() < deadline:
        time.sleep(LOOK_S)
        left, acted = waiting(), cut()
    return {"rejoin_s": round(time.monotonic() - t0, 1),
            **({"rejoin_waiting": left} if left else {}),
            **({"rejoin_cut": acted} if acted else {})}


KINDS = (
    Kind("instance-kill", FAMILY, start_instance_kill, heal_instance_kill, instance_target,
         triggers=("at-risk",)),
)
