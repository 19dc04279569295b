"""Scaling a consumer application's group out and in (issue 47), as a user's autoscaler
or a deployment does: each makes the group rebalance.

    scale-out   start one more instance of each application (``app/<name>/<N>``, N the
                next instance number), stop it cleanly (SIGTERM) at the heal
    scale-in    stop instance I cleanly (SIGTERM: it leaves the group), start it again
                at the heal

The target of ``scale-out`` is ``{"apps": true}`` or ``{"app": NAME}``; of ``scale-in``
an instance, as instance-kill's. What the fault did is the rebalances the application's
instances saw (their state files' ``rebalances``, counted by their rebalance listeners):
the start records each instance's count, and the heal, once it acted, watches for at
most ``observe`` seconds (default :data:`OBSERVE_S`) until each instance that stayed up
has seen the rebalance its heal causes, then records the counts again
(verifier.judge.faults.group counts the difference).
"""

from __future__ import annotations

import time

from verifier.harness.faults.kinds.application import (
    instance_target,
    matching,
    read_state,
    rebalances,
)
from verifier.harness.faults.kinds.base import (
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    Settling,
)
from verifier.harness.faults.kinds.group import app_groups, apps_target, check_params
from verifier.harness.procs import ManagedProcess
from verifier.judge.faults.group import FAMILY

OBSERVE_S = 15.0
LOOK_S = 0.2
STOP_TIMEOUT_S = 30.0
ENV_INSTANCE, ENV_STATE_FILE = "VERIFIER_INSTANCE", "VERIFIER_STATE_FILE"


def extra_instance(template, app: str, instance: int):
    """One more instance of ``template``'s application: its command and environment,
    instance number ``instance``, its own state file and log beside the others'."""
    state_file = template.state_file.with_name(f"{instance}.state.json")
    log = template.log_path.with_name(f"app-{app}-{instance}.log")
    proc = ManagedProcess(f"app/{app}/{instance}", list(template.argv), log,
                          env={**template.env, ENV_INSTANCE: str(instance),
                               ENV_STATE_FILE: str(state_file)})
    proc.state_file = state_file
    return proc


def start_scale_out(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    apps = app_groups(fault.target, env.processes)
    if not apps:
        raise NotApplied(f"no application matches {fault.target!r}")
    added = []
    before = rebalances(env, [n for names in apps.values() for n in names])
    for app, names in apps.items():
        template = env.processes[names[0]]
        if getattr(template, "state_file", None) is None:
            raise NotApplied(f"{names[0]} is not an application instance this fault can copy")
        instance = 1 + max(int(n.rsplit("/", 1)[1]) for n in names)
        proc = extra_instance(template, app, instance)
        proc.start()
        env.processes[proc.name] = proc
        added.append({"app": app, "process": proc.name, "instance": instance,
                      "pid": proc.pid})
    state["added"], state["watch"] = [a["process"] for a in added], sorted(before)
    return {"added": added, "rebalances": before}


def heal_scale_out(fault: ScheduledFault, env: FaultEnv, state: dict) -> Settling:
    stayed = state["watch"]
    seen = rebalances(env, stayed)
    stopped = []
    for name in state["added"]:
        proc = env.processes.pop(name)
        code = proc.terminate(timeout=STOP_TIMEOUT_S)
        stopped.append({"process": name, "exit": code,
                        "rebalances": (read_state(proc) or {}).get("rebalances")})
    return Settling({"stopped": stopped}, lambda: _watch(fault, env, stayed, seen))


def _watch(fault: ScheduledFault, env: FaultEnv, names, seen: dict) -> dict:
    """Wait (at most ``observe`` s) until every one of ``names`` saw one more rebalance
    than ``seen``; their counts then."""
    deadline = time.monotonic() + float(fault.action_params.get("observe", OBSERVE_S))
    now = rebalances(env, names)
    while time.monotonic() < deadline and any(
            now[n] is not None and seen.get(n) is not None and now[n] <= seen[n]
            for n in names if env.processes.get(n) is not None and env.processes[n].alive):
        time.sleep(LOOK_S)
        now = rebalances(env, names)
    return {"rebalances": now}


def start_scale_in(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    names = matching(fault.target, env.processes)
    if not names:
        raise NotApplied(f"no application instance matches {fault.target!r}")
    apps = app_groups({}, env.processes)
    watch = sorted(n for name in names for n in apps[name.split("/")[1]] if n not in names)
    before = rebalances(env, watch)
    stopped = []
    for name in names:
        proc = env.processes[name]
        if not proc.alive:
            continue
        stopped.append({"process": name, "app": name.split("/")[1],
                        "exit": proc.terminate(timeout=STOP_TIMEOUT_S)})
    if not stopped:
        raise NotApplied(f"no instance of {names} is running")
    state["stopped"], state["watch"] = [s["process"] for s in stopped], watch
    # the rebalance its leaving causes: waited for here, so the start's counts show it
    return {"stopped": stopped, "rebalances_before": before,
            **_watch(fault, env, watch, before)}


def heal_scale_in(fault: ScheduledFault, env: FaultEnv, state: dict) -> Settling:
    seen = rebalances(env, state["watch"])
    for name in state["stopped"]:
        if not env.processes[name].alive:
            env.processes[name].restart()
    return Settling({"restarted": state["stopped"]},
                    lambda: _watch(fault, env, state["watch"], seen))


KINDS = (
    Kind("scale-out", FAMILY, start_scale_out, heal_scale_out, apps_target,
         check_params=check_params),
    Kind("scale-in", FAMILY, start_scale_in, heal_scale_in, instance_target,
         check_params=check_params),
)
