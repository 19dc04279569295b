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

    group-coordinator-kill   SIGKILL the broker that coordinates the applications' groups
                             (the leader of the group's __consumer_offsets partition, as
                             FindCoordinator answers), restarted at the heal

Its target is ``{"apps": true}`` (the broker coordinating the most of the run's
application groups; the lowest node id on a tie) or ``{"app": NAME}``. The start keeps
every application's coordinator then (``groups``: app -> node) and each instance's state
(``instances``: app -> [state]); the kill and the restart are the broker-kill's
(verifier.harness.faults.kinds.broker), so its detail also says which of the run's
partitions the broker led. The heal adds the errors each instance reported between the
kill and the broker's return (``errors``: app -> [error]).
"""

from __future__ import annotations

import signal
import time

from verifier.harness.faults.kinds.application import (
    at_risk_each,
    instance_target,
    matching,
    read_state,
)
from verifier.harness.faults.kinds.base import (
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    Settling,
)
from verifier.harness.faults.kinds.broker import heal_broker_kill, start_broker_kill
from verifier.harness.faults.triggers import Gate
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
    stopped = []
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

    missed = at_risk_each(fault, env, names, gate, pause)
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
    done = int((before or {}).get("batches") or 0)
    # its batch went through if its counter rose (the same run of its loop), or an error
    # after the resume says it had (the copier starts over after an error, counting anew:
    # the commit-before copier writes its batch, then its next commit is refused)
    if (now.get("pid") == (before or {}).get("pid") and int(now.get("batches") or 0) > done
            and not errors) or any(int(e.get("batches") or 0) > done for e in errors):
        return {"after": COMPLETED, **({"errors": errors} if errors else {})}
    if errors:
        return {"after": REFUSED, "errors": errors}
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


# ----- the group coordinator's broker ------------------------------------------------------

GROUP_ENV = "VERIFIER_GROUP_ID"


def apps_target(target, node_ids, processes) -> None:
    """``{"apps": true}`` or ``{"app": NAME}`` (an application the run has, when known)."""
    ok = target == {"apps": True} or (isinstance(target, dict) and list(target) == ["app"]
                                      and isinstance(target["app"], str))
    if not ok:
        raise UsageError(f"target must be {{\"apps\": true}} or {{\"app\": NAME}}, not "
                         f"{target!r}")
    if processes is not None and not app_groups(target, processes):
        raise UsageError(f"no application matches {target!r} (name the applications "
                         "with --app)")


def app_groups(target: dict, processes) -> dict[str, list[str]]:
    """App name -> its instances' process names, for the applications ``target`` names."""
    out: dict[str, list[str]] = {}
    for name in sorted(processes):
        parts = name.split("/")
        if len(parts) == 3 and parts[0] == "app" and target.get("app") in (None, parts[1]):
            out.setdefault(parts[1], []).append(name)
    return out


def group_coordinators(env: FaultEnv, groups: list[str]) -> dict[str, int | None]:
    """Group id -> the node of its coordinator now (FindCoordinator; None: not found)."""
    from verifier.harness.topics import admin

    out: dict[str, int | None] = dict.fromkeys(groups)
    try:
        with admin(env.bootstrap_servers, **env.client_config) as a:
            # kafka-python 3 has no public call for it: the one its group calls use
            found = a._manager.run(a._find_coordinator_ids, list(groups))
        out.update({g: int(n) for g, n in found.items() if n is not None and int(n) >= 0})
    except Exception:  # noqa: BLE001 - unknown coordinators: the start says so
        pass
    return out


def pick_coordinator(coords: dict[str, int | None]) -> int:
    """The node coordinating the most of ``coords``' groups (lowest id on a tie)."""
    counts: dict[int, int] = {}
    for node in coords.values():
        if node is not None:
            counts[node] = counts.get(node, 0) + 1
    if not counts:
        raise NotApplied(f"the coordinator of no application group is known: {coords}")
    return min(counts, key=lambda n: (-counts[n], n))


def start_coordinator_kill(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    apps = app_groups(fault.target, env.processes)
    if not apps:
        raise NotApplied(f"no application matches {fault.target!r}")
    group_of = {app: env.processes[names[0]].env.get(GROUP_ENV, "") if
                hasattr(env.processes[names[0]], "env") else "" for app, names in apps.items()}
    coords = group_coordinators(env, sorted(g for g in group_of.values() if g))
    node = pick_coordinator(coords)
    instances = {app: [read_state(env.processes[n]) for n in names]
                 for app, names in apps.items()}
    roles = other_roles(env, apps)
    as_broker = ScheduledFault(fault.id, "broker-kill", {"node": node}, fault.start,
                               fault.duration, {})
    detail = start_broker_kill(as_broker, env, state)
    state["since"], state["apps"] = time.time(), apps
    return {**detail, "groups": {app: coords.get(g) for app, g in group_of.items()},
            "group_ids": group_of, "instances": instances, "roles": roles}


def other_roles(env: FaultEnv, apps: dict[str, list[str]]) -> dict[str, dict]:
    """App -> the brokers it needs besides its group coordinator, before the kill: its
    instances' transaction coordinators (``<prefix><instance>``, the presets' ids) and
    its output partitions' leaders (``{"txn": {id: node}, "out": {partition: node}}``);
    what cannot be looked up is left out."""
    from verifier.harness.faults.targets import coordinators_of
    from verifier.harness.topics import partition_states

    out = {}
    for app, names in apps.items():
        envs = [getattr(env.processes[n], "env", {}) for n in names]
        tids = [e["VERIFIER_TRANSACTIONAL_ID_PREFIX"] + e["VERIFIER_INSTANCE"] for e in envs
                if "VERIFIER_TRANSACTIONAL_ID_PREFIX" in e and "VERIFIER_INSTANCE" in e]
        topic = next((e["VERIFIER_OUTPUT_TOPIC"] for e in envs if "VERIFIER_OUTPUT_TOPIC" in e),
                     None)
        txn = {t: n for t, n in coordinators_of(env.bootstrap_servers, tids,
                                                **env.client_config).items() if n is not None}
        leaders = {}
        if topic:
            try:
                states = partition_states(env.bootstrap_servers, [topic], **env.client_config)
                leaders = {str(p): int(s["leader"]) for (_, p), s in states.items()}
            except Exception:  # noqa: BLE001 - unknown leaders: left out, said by absence
                pass
        out[app] = {"txn": txn, "out": leaders}
    return out


def heal_coordinator_kill(fault: ScheduledFault, env: FaultEnv, state: dict) -> Settling:
    settling = heal_broker_kill(fault, env, state)

    def ready() -> dict:
        more = settling.wait()
        errors = {}
        for app, names in state.get("apps", {}).items():
            errs = [e for n in names for e in (read_state(env.processes[n]) or {})
                    .get("errors") or () if isinstance(e, dict)
                    and float(e.get("t", 0)) >= state["since"]]
            errors[app] = errs
        return {**more, "errors": errors}

    return Settling(settling.detail, ready)


KINDS = (
    Kind("instance-pause", FAMILY, start_instance_pause, heal_instance_pause,
         instance_target, check_params=check_params, triggers=("at-risk",)),
    Kind("group-coordinator-kill", FAMILY, start_coordinator_kill, heal_coordinator_kill,
         apps_target, needs="cluster", on_brokers=True),
)
