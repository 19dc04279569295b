"""Undo every fault an environment can have, whatever the nemesis recorded: the final
heal of a run (the nemesis's heal-all) and of the pytest plugin's ``kafka_faults``."""

from __future__ import annotations

import signal
from collections.abc import Callable

from verifier.harness.faults.kinds.base import FaultEnv


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
