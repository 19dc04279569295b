"""What a fault acts on: a broker chosen by role, or a managed process.

A broker target is a small JSON object, resolved to a node id at the moment the fault
starts (leadership moves, so "the leader of t-0" means the leader *then*):

    {"node": 2}                                      a named node
    {"leader": {"topic": "t", "partition": 0}}       the partition's current leader
    {"coordinator": {"transactional_id": "tx-1"}}    the transaction coordinator
    {"all": true}                                    every broker (proxy faults only)

A process target is ``{"process": NAME}``: anything registered under that name that
satisfies :class:`ProcessTarget` (``verifier.harness.procs.ManagedProcess`` does) - the load
generators and the streaming observer.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from verifier.harness.topics import admin, partition_states
from verifier.rundata.errors import UsageError, VerifierError

BROKER_SELECTORS = ("node", "leader", "coordinator", "all")


@runtime_checkable
class ProcessTarget(Protocol):
    """A process the nemesis can SIGKILL and start again with the same identity."""

    @property
    def alive(self) -> bool: ...

    def kill(self) -> object: ...

    def restart(self) -> object: ...


class TargetError(VerifierError):
    """A target could not be resolved when the fault started (e.g. no leader)."""


def validate_broker_target(target: object, node_ids: list[int] | None,
                           allow_all: bool) -> None:
    """Raise UsageError unless ``target`` is a well-formed broker selector."""
    if not isinstance(target, dict) or len(target) != 1:
        raise UsageError(f"a broker target is one of {BROKER_SELECTORS} as a one-key "
                         f"object, not {target!r}")
    (key, value), = target.items()
    if key == "node":
        if not isinstance(value, int) or (node_ids is not None and value not in node_ids):
            raise UsageError(f"target node {value!r} is not one of {node_ids}")
    elif key == "leader":
        if not (isinstance(value, dict) and isinstance(value.get("topic"), str)
                and isinstance(value.get("partition"), int) and len(value) == 2):
            raise UsageError(f"leader target needs {{topic, partition}}, got {value!r}")
    elif key == "coordinator":
        if not (isinstance(value, dict) and isinstance(value.get("transactional_id"), str)
                and len(value) == 1):
            raise UsageError(f"coordinator target needs {{transactional_id}}, got {value!r}")
    elif key == "all":
        if not allow_all or value is not True:
            raise UsageError("target {\"all\": true} is only for proxy faults")
    else:
        raise UsageError(f"unknown target {key!r}; expected one of {BROKER_SELECTORS} "
                         "or process")


def resolve_broker(target: dict, bootstrap_servers: str, **client_config) -> int | None:
    """The node id a broker target names now; None for ``{"all": true}``.
    ``client_config``: the clients' security settings (an external secured cluster)."""
    (key, value), = target.items()
    if key == "all":
        return None
    if key == "node":
        return int(value)
    if key == "leader":
        states = partition_states(bootstrap_servers, [value["topic"]], **client_config)
        state = states.get((value["topic"], value["partition"]))
        if state is None or state["leader"] < 0:
            raise TargetError(f"partition {value['topic']}-{value['partition']} has no "
                              f"leader now ({state})")
        return int(state["leader"])
    if key == "coordinator":
        tid = value["transactional_id"]
        with admin(bootstrap_servers, **client_config) as a:
            described = a.describe_transactions([tid])
        if tid not in described:
            raise TargetError(f"no transaction coordinator known for {tid!r}")
        return int(described[tid].coordinator_id)
    raise TargetError(f"cannot resolve target {target!r}")
