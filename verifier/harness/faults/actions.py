"""How each fault kind starts and heals, against one run's environment.

Each handler returns a ``detail`` dict for the nemesis history (docs/formats.md §3).
A start that raises :class:`NotApplied` did nothing (history ``fail``); any other error
leaves the outcome open (history ``info``) and the fault is still healed.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.harness.faults.retention import heal_retention, start_retention
from verifier.harness.faults.spec import PROCESS_KINDS, PROXY_KINDS, ScheduledFault
from verifier.harness.faults.targets import ProcessTarget, TargetError, resolve_broker
from verifier.harness.faults.triggers import (
    PROCESS_PROBES,
    Gate,
    NotTriggered,
    probe_mid_batch,
    probe_rule_hit,
)
from verifier.rundata.errors import UsageError, VerifierError


class NotApplied(VerifierError):
    """The fault was not applied at all (its target did not exist or was not running)."""


@dataclass
class Settling:
    """A heal that has acted (``detail``) but whose target takes a while to be back:
    ``wait()`` blocks until it is and returns more detail. The nemesis waits for it off
    its schedule, so a broker restart does not hold back the faults planned meanwhile,
    and writes the heal's ``ok`` line when it returns."""

    detail: dict
    wait: Callable[[], dict]


@dataclass
class FaultEnv:
    """Everything a fault can act on in one run; absent parts disable their faults."""

    bootstrap_servers: str
    cluster: object | None = None  # verifier.harness.cluster.LocalCluster
    proxy: object | None = None  # verifier.harness.faults.control.ProxyClient
    processes: dict[str, ProcessTarget] = field(default_factory=dict)
    partition: object | None = None  # verifier.harness.faults.netns.Partition
    ready_timeout: float = 180.0
    #: the clients' security settings (kafka-python names) for the tool's own lookups
    client_config: dict = field(default_factory=dict)
    #: the run's producer topics: a broker fault records the partitions its target led
    #: (start detail ``leads``, the exposure of each column: verifier.judge.exposure)
    topics: tuple[str, ...] = ()

    def require(self, part: str, kind: str):
        value = getattr(self, part)
        if value is None:
            raise NotApplied(f"{kind} needs a {part}, and this run has none")
        return value


def _broker(fault: ScheduledFault, env: FaultEnv) -> int | None:
    try:
        return resolve_broker(fault.target, env.bootstrap_servers, **env.client_config)
    except TargetError as exc:
        raise NotApplied(str(exc)) from exc


# ----- proxy rules ---------------------------------------------------------------------

def start_proxy_rule(fault: ScheduledFault, env: FaultEnv, state: dict,
                     gate: Gate | None = None) -> dict:
    """Set the fault's proxy rule. With a trigger (``appended``, ``held``) the rule is
    set under the gate's lock and the start is complete at its first hit; without one
    within the limit the rule is removed again and the fault is not applied."""
    proxy = env.require("proxy", fault.kind)
    broker = _broker(fault, env)
    trigger = fault.trigger
    params = dict(fault.action_params)
    if trigger is not None and trigger.name == "appended":
        params["appended"] = True  # only a response to an append is an ack lost
    if trigger is None:
        rule = proxy.add_rule(kind=PROXY_KINDS[fault.kind], broker=broker, **params)
        state["rule"] = rule["id"]
        return {"node": broker, "rule": rule}
    gate = gate or Gate()
    with gate.lock:
        rule = proxy.add_rule(kind=PROXY_KINDS[fault.kind], broker=broker, **params)
        state["rule"] = rule["id"]
    try:
        hit = gate.until(trigger, lambda: probe_rule_hit(proxy, rule["id"]))
    except NotTriggered as exc:
        with gate.lock:
            removed = proxy.remove_rule(rule["id"])
        state.clear()
        raise NotApplied(f"{exc}; the rule was removed (it matched {removed['matched']})") \
            from None
    return {"node": broker, "rule": rule, **hit}


def heal_proxy_rule(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    rule = env.proxy.remove_rule(state["rule"])
    # the rule's final counters: how many responses it dropped, frames it delayed, ...
    return {"rule": rule["id"], "matched": rule["matched"], "hits": rule["hits"],
            "clients": rule.get("clients", {})}  # per client id: [matched, hits]


# ----- broker processes ----------------------------------------------------------------

def _running(env: FaultEnv, node: int, kind: str):
    cluster = env.require("cluster", kind)
    if cluster.node_state(node) != "running":
        raise NotApplied(f"node {node} is {cluster.node_state(node)}, not running")
    return cluster


def _leads(env: FaultEnv, node: int | None) -> dict:
    """``{"leads": [[topic, partition], ...]}``: the run's partitions ``node`` leads now
    (one metadata lookup before the fault acts); {} when unknown."""
    if node is None or not env.topics:
        return {}
    from verifier.harness.topics import partition_states

    try:
        states = partition_states(env.bootstrap_servers, env.topics, **env.client_config)
    except Exception:  # noqa: BLE001 - the fault still runs; its exposure counts every partition
        return {}
    return {"leads": sorted([t, p] for (t, p), s in states.items() if s["leader"] == node)}


def start_broker_kill(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    node = _broker(fault, env)
    cluster = _running(env, node, fault.kind)
    pid = cluster.pids[node]
    state["node"] = node
    leads = _leads(env, node)
    cluster.kill_node(node)
    return {"node": node, "pid": pid, "signal": "SIGKILL", **leads}


def heal_broker_kill(fault: ScheduledFault, env: FaultEnv, state: dict) -> Settling:
    """Restart the broker; the heal is done (its ``ok`` line written) when the cluster is
    ready again, 10-25 s later on 2 cores: :class:`Settling`."""
    cluster, node = env.cluster, state["node"]
    t0 = time.monotonic()
    if cluster.node_state(node) not in ("running", "paused"):
        cluster.start_node(node)

    def ready() -> dict:
        cluster.wait_ready(timeout=env.ready_timeout)
        return {"ready_seconds": round(time.monotonic() - t0, 3)}

    return Settling({"node": node, "pid": cluster.pids[node]}, ready)


def start_broker_pause(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    node = _broker(fault, env)
    cluster = _running(env, node, fault.kind)
    state["node"] = node
    leads = _leads(env, node)
    cluster.pause_node(node)
    return {"node": node, "pid": cluster.pids[node], "signal": "SIGSTOP", **leads}


def heal_broker_pause(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    cluster, node = env.cluster, state["node"]
    if cluster.node_state(node) == "paused":
        cluster.resume_node(node)
    return {"node": node, "signal": "SIGCONT"}


def start_partition(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    partition = env.require("partition", fault.kind)
    node = _broker(fault, env)
    state["node"] = node
    leads = _leads(env, node)
    return {"node": node, **leads, **partition.cut(node)}


def heal_partition(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    return {"node": state["node"], **env.partition.heal(state["node"])}


# ----- broker settings (the admin API) -------------------------------------------------

def start_broker_config(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    from verifier.harness.broker_config import set_dynamic

    settings = fault.params["settings"]
    state["previous"] = set_dynamic(env.bootstrap_servers, settings, **env.client_config)
    return {"settings": dict(settings),
            "previous": {str(n): v for n, v in state["previous"].items()}}


def heal_broker_config(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    from verifier.harness.broker_config import restore_dynamic

    return {"restored": restore_dynamic(env.bootstrap_servers, state["previous"],
                                        **env.client_config)}


# ----- generator and observer processes ------------------------------------------------

#: How long past its planned time the nemesis holds back a kill of a process that is not
#: serving yet (verifier.harness.faults.nemesis), and how often it looks again.
SERVING_DEFER_S = 120.0
SERVING_RECHECK_S = 0.5
#: How long a *restarted* process must have served before the next kill: the time the
#: live counts move between two kills (a first start is waited for by the load itself).
SERVING_MIN_S = 20.0


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
    if fault.kind not in PROCESS_KINDS:
        return None
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
    probe = PROCESS_PROBES[trigger.name]
    gate = gate or Gate()
    try:
        return gate.until(trigger, lambda: probe(proc), lambda found: kill(
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


Handler = Callable[[ScheduledFault, FaultEnv, dict], "dict | Settling"]


def _spark_faults():
    """verifier.harness.faults.spark_faults (it imports this module's NotApplied)."""
    from verifier.harness.faults import spark_faults

    return spark_faults

#: Fault kinds that act on the cluster's brokers: one waits for a settling broker heal
#: before it acts (verifier.harness.faults.nemesis).
CLUSTER_KINDS = frozenset({"broker-kill", "broker-pause", "broker-config"})

HANDLERS: dict[str, tuple[Handler, Handler]] = {
    **{k: (start_proxy_rule, heal_proxy_rule) for k in PROXY_KINDS},
    "broker-kill": (start_broker_kill, heal_broker_kill),
    "broker-pause": (start_broker_pause, heal_broker_pause),
    "network-partition": (start_partition, heal_partition),
    "producer-kill": (start_process_kill, heal_process_kill),
    "observer-kill": (start_process_kill, heal_process_kill),
    "process-kill": (start_process_kill, heal_process_kill),
    "checkpoint-lost": (start_process_kill, heal_checkpoint_lost),
    "process-pause": (start_process_pause, heal_process_pause),
    # a pipeline's executor, or a worker with its executors (standalone cluster)
    "executor-kill": (lambda *a: _spark_faults().start_executor_kill(*a),
                      lambda *a: _spark_faults().heal_executor_kill(*a)),
    "worker-kill": (lambda *a: _spark_faults().start_worker_kill(*a),
                    lambda *a: _spark_faults().heal_worker_kill(*a)),
    "broker-config": (start_broker_config, heal_broker_config),
    "retention": (start_retention, heal_retention),
}


def check_env(kinds: set[str], env: FaultEnv) -> None:
    """Before anything starts: every fault kind has the part of the run it acts on."""
    needs = {"cluster": set(HANDLERS) & {"broker-kill", "broker-pause"},
             "proxy": set(PROXY_KINDS), "partition": {"network-partition"}}
    for part, needing in needs.items():
        missing = kinds & needing
        if missing and getattr(env, part) is None:
            raise UsageError(f"fault kinds {sorted(missing)} need a {part}, and this run "
                             "has none")


def heal_everything(env: FaultEnv, killed: set[str]) -> dict:
    """Undo every fault this environment can have, whatever the nemesis recorded:
    clear proxy rules, remove partitions, continue paused and start dead brokers, and
    restart the processes in ``killed``. Each step runs even if an earlier one failed."""
    detail: dict = {}
    errors = []

    def step(name: str, fn: Callable[[], object]) -> None:
        try:
            detail[name] = fn()
        except Exception as exc:  # noqa: BLE001 - the remaining steps must still run
            errors.append(f"{name}: {type(exc).__name__}: {exc}")

    if env.proxy is not None:
        step("proxy_rules_cleared", lambda: len(env.proxy.clear_rules()))
    if env.partition is not None:
        step("partition", env.partition.heal_all)
    if env.cluster is not None:
        step("brokers", lambda: _heal_brokers(env))
    for name in sorted(killed):
        proc = env.processes[name]
        step(f"process:{name}", lambda p=proc: None if p.alive else p.restart())
    step("continued", lambda: _continue_all(env))
    if errors:
        detail["errors"] = errors
    return detail


def _continue_all(env: FaultEnv) -> int:
    """SIGCONT every running process (one a process-pause left stopped; harmless to the
    others); how many were signalled."""
    n = 0
    for proc in env.processes.values():
        if getattr(proc, "alive", False) and hasattr(proc, "send_signal"):
            proc.send_signal(signal.SIGCONT)
            n += 1
    return n


def _heal_brokers(env: FaultEnv) -> dict:
    cluster, healed = env.cluster, {}
    for node in cluster.spec.node_ids:
        state = cluster.node_state(node)
        if state == "paused":
            cluster.resume_node(node)
            healed[node] = "resumed"
        elif state in ("dead", "stopped"):
            cluster.start_node(node)
            healed[node] = "started"
    if healed:
        cluster.wait_ready(timeout=env.ready_timeout)
    return healed
