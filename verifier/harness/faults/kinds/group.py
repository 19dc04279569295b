"""Faults of a consumer application's group (issue 47).

    instance-pause   SIGSTOP an instance of each application, SIGCONT at the heal: paused
                     past the group's session timeout its partitions move to another
                     instance, and resumed it is a zombie whose writes must be fenced
                     under exactly-once

The target is an instance, as instance-kill's (verifier.harness.faults.kinds.application):
``{"instance": I}`` or ``{"app": NAME, "instance": I}``. With the trigger ``at-risk`` the
pause waits until the instance says (its state file) it has a batch between its two
steps, so the zombie resumes in the middle of one: the transactional copier in an open
transaction, about to send its offsets with the group's metadata of before the pause.

What the fault did is in its records (verifier.judge.faults.group counts it): the start
keeps the instance's state once stopped (the batch in flight); the heal, just before the
SIGCONT, which of its partitions the application's other instances hold (``moved``), and
then watches the resumed instance's state file for up to ``observe`` seconds (params,
default :data:`OBSERVE_S`): an error it reports after the resume (``errors``: a commit
refused, a fenced producer) means its writes were refused; its batch counter rising with
no error means the batch went through. The heal's history line is written when that is
known (:class:`~.base.Settling`), so the schedule goes on meanwhile.
"""

from __future__ import annotations

import signal
import time

from verifier.harness.faults.kinds.application import (
    instance_target,
    matching,
    probe_at_risk,
    read_state,
)
from verifier.harness.faults.kinds.base import (
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    Settling,
)
from verifier.harness.faults.triggers import Gate, NotTriggered
from verifier.judge.faults.group import COMPLETED, EXITED, FAMILY, REFUSED, UNSEEN
from verifier.rundata.errors import UsageError

#: how long the heal watches a resumed instance for what it does (a refused commit comes
#: at its next send or commit, within a second of the resume on the presets)
OBSERVE_S = 30.0
LOOK_S = 0.2


def check_params(params: dict) -> None:
    extra = set(params) - {"observe"}
    if extra:
        raise UsageError(f"takes only params.observe (seconds), got {sorted(extra)}")
    observe = params.get("observe", OBSERVE_S)
    if isinstance(observe, bool) or not isinstance(observe, int | float) or \
            not 0 < observe <= 300:
        raise UsageError(f"params.observe must be a number of seconds in (0, 300], "
                         f"not {observe!r}")


def start_instance_pause(fault: ScheduledFault, env: FaultEnv, state: dict,
                         gate: Gate | None = None) -> dict:
    names = matching(fault.target, env.processes)
    if not names:
        raise NotApplied(f"no application instance matches {fault.target!r}")
    stopped, missed = [], []
    gate = gate or Gate()

    def pause(name: str, found: dict) -> dict:
        proc = env.processes[name]
        if not proc.alive:
            raise NotApplied(f"process {name!r} is not running")
        proc.send_signal(signal.SIGSTOP)
        # stopped, it writes no more: what its file says now is what it resumes in
        seen = read_state(proc) or found.get("state")
        _, app, instance = name.split("/")
        entry = {"process": name, "app": app, "instance": int(instance),
                 "pid": getattr(proc, "pid", None), "state": seen,
                 "t": round(time.time(), 3)}
        stopped.append(entry)
        return entry

    for name in names:
        proc = env.processes[name]
        try:
            if fault.trigger is None:
                pause(name, {})
            else:
                gate.until(fault.trigger, lambda p=proc: probe_at_risk(p),
                           lambda found, n=name: pause(n, found))
        except (NotTriggered, NotApplied) as exc:
            missed.append({"process": name, "why": str(exc)})
    state["processes"] = [k["process"] for k in stopped]
    state["before"] = {k["process"]: k["state"] for k in stopped}
    if not stopped:
        raise NotApplied("; ".join(m["why"] for m in missed), {"missed": missed})
    return {"signal": "SIGSTOP", "paused": stopped, **({"missed": missed} if missed else {})}


def moved(name: str, before: dict | None, processes: dict) -> list[str]:
    """The partitions ``name`` held at its pause that another instance of its application
    says it holds now."""
    mine = set((before or {}).get("assigned") or ())
    prefix = name.rsplit("/", 1)[0] + "/"
    held: set[str] = set()
    for other, proc in processes.items():
        if other != name and other.startswith(prefix):
            held |= set((read_state(proc) or {}).get("assigned") or ())
    return sorted(mine & held)


def after_resume(proc, before: dict | None, since: float) -> dict:
    """What the resumed instance's state file says it did since ``since`` (wall s)."""
    if not proc.alive:
        return {"after": EXITED}
    now = read_state(proc) or {}
    errors = [e for e in now.get("errors") or () if isinstance(e, dict)
              and float(e.get("t", 0)) >= since]
    if errors:
        return {"after": REFUSED, "errors": errors}
    if now.get("pid") == (before or {}).get("pid") and \
            int(now.get("batches") or 0) > int((before or {}).get("batches") or 0):
        return {"after": COMPLETED}
    return {}


def heal_instance_pause(fault: ScheduledFault, env: FaultEnv, state: dict) -> Settling:
    resumed = []
    since = time.time()
    for name in state.get("processes", ()):
        proc = env.processes[name]
        before = state["before"].get(name)
        entry = {"process": name, "moved": moved(name, before, env.processes)}
        if proc.alive:
            proc.send_signal(signal.SIGCONT)
        resumed.append(entry)
    observe = float(fault.action_params.get("observe", OBSERVE_S))

    def watch() -> dict:
        deadline = time.monotonic() + observe
        pending = {e["process"]: e for e in resumed}
        while pending and time.monotonic() < deadline:
            for name, entry in list(pending.items()):
                seen = after_resume(env.processes[name], state["before"].get(name), since)
                if seen:
                    entry.update(seen)
                    pending.pop(name)
            if pending:
                time.sleep(LOOK_S)
        for entry in pending.values():
            entry["after"] = UNSEEN
        return {"resumed": resumed, "observed_s": observe}

    return Settling({"signal": "SIGCONT"}, watch)


KINDS = (
    Kind("instance-pause", FAMILY, start_instance_pause, heal_instance_pause,
         instance_target, check_params=check_params, triggers=("at-risk",)),
)
