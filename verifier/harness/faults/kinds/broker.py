"""Broker faults: a broker process killed or paused, or cut off from the others.

    broker-kill        SIGKILL (docker kill), restarted at the heal, which settles once
                       the cluster is ready again
    broker-pause       SIGSTOP (docker pause), SIGCONT at the heal
    network-partition  the node cut off from the other brokers (nftables in the run's
                       network namespace, or docker network disconnect)

The target is a broker selector resolved when the fault starts (verifier.harness.faults
.targets). The start records the run's partitions the broker led (``leads``): the
exposure counts the sends to those (verifier.judge.faults.broker), and the transaction
coordinator of each of the run's transactional ids then (``coordinators``), with those the
target coordinates (``coordinator_of``): a client whose coordinator died may stall, which
the verdict reports as a liveness finding (verifier.judge.liveness). A leader target with
``avoid = "coordinators"`` takes a partition whose leader coordinates none of them.
"""

from __future__ import annotations

import time

from verifier.harness.faults.kinds.base import (
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    Settling,
    broker_choice,
    broker_target,
)
from verifier.judge.faults.broker import FAMILY

#: where an application instance's environment names its output topic (verifier.rundata.apps)
OUTPUT_ENV = "VERIFIER_OUTPUT_TOPIC"


def _running(env: FaultEnv, node: int, kind: str):
    cluster = env.require("cluster", kind)
    if cluster.node_state(node) != "running":
        raise NotApplied(f"node {node} is {cluster.node_state(node)}, not running")
    return cluster


def app_outputs(env: FaultEnv) -> dict[str, str]:
    """Application name -> its output topic (its instances' environment), for the run's
    applications under test."""
    out = {}
    for name, proc in env.processes.items():
        topic = (getattr(proc, "env", None) or {}).get(OUTPUT_ENV)
        if name.startswith("app/") and topic:
            out[name.split("/")[1]] = topic
    return out


def leads(env: FaultEnv, node: int | None) -> dict:
    """``{"leads": [[topic, partition], ...]}``: the run's partitions ``node`` leads now
    (one metadata lookup before the fault acts), its applications' output topics' among
    them (``app_outputs``: app -> topic); {} when unknown."""
    outputs = app_outputs(env)
    topics = [*env.topics, *sorted(set(outputs.values()))]
    if node is None or not topics:
        return {}
    from verifier.harness.topics import partition_states

    try:
        states = partition_states(env.bootstrap_servers, topics, **env.client_config)
    except Exception:  # noqa: BLE001 - the fault still runs; its exposure counts every partition
        return {}
    return {"leads": sorted([t, p] for (t, p), s in states.items() if s["leader"] == node),
            **({"app_outputs": outputs} if outputs else {})}


def start_broker_kill(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    node, chosen = broker_choice(fault, env)
    cluster = _running(env, node, fault.kind)
    pid = cluster.pids[node]
    state["node"] = node
    led = leads(env, node)
    cluster.kill_node(node)
    return {"node": node, "pid": pid, "signal": "SIGKILL", **led, **chosen}


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
    node, chosen = broker_choice(fault, env)
    cluster = _running(env, node, fault.kind)
    state["node"] = node
    led = leads(env, node)
    cluster.pause_node(node)
    return {"node": node, "pid": cluster.pids[node], "signal": "SIGSTOP", **led, **chosen}


def heal_broker_pause(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    cluster, node = env.cluster, state["node"]
    if cluster.node_state(node) == "paused":
        cluster.resume_node(node)
    return {"node": node, "signal": "SIGCONT"}


def start_partition(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    partition = env.require("partition", fault.kind)
    node, chosen = broker_choice(fault, env)
    state["node"] = node
    led = leads(env, node)
    return {"node": node, **led, **chosen, **partition.cut(node)}


def heal_partition(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    return {"node": state["node"], **env.partition.heal(state["node"])}


KINDS = (
    Kind("broker-kill", FAMILY, start_broker_kill, heal_broker_kill, broker_target(False),
         needs="cluster", on_brokers=True),
    Kind("broker-pause", FAMILY, start_broker_pause, heal_broker_pause,
         broker_target(False), needs="cluster", on_brokers=True),
    Kind("network-partition", FAMILY, start_partition, heal_partition, broker_target(False),
         needs="partition"),
)
