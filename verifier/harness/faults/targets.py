"""What a fault acts on: a broker chosen by role, or a managed process.

A broker target is a small JSON object, resolved to a node id at the moment the fault
starts (leadership moves, so "the leader of t-0" means the leader *then*):

    {"node": 2}                                      a named node
    {"leader": {"topic": "t", "partition": 0}}       the partition's current leader
    {"leader": {"topic": "t", "avoid": "coordinators"}}
                                                     the leader of a partition of t that
                                                     coordinates none of the run's
                                                     transactional ids (``partition``, if
                                                     given, is tried first)
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
#: what a leader target may avoid (``{"leader": {..., "avoid": "coordinators"}}``)
AVOIDABLE = ("coordinators",)


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
        _validate_leader(value)
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


def _validate_leader(value: object) -> None:
    """``{topic, partition}``, or ``{topic, avoid = "coordinators"}`` with an optional
    ``partition`` to try first."""
    if not isinstance(value, dict) or not isinstance(value.get("topic"), str):
        raise UsageError(f"leader target needs {{topic, partition}} or {{topic, avoid = "
                         f"\"coordinators\"}}, got {value!r}")
    extra = sorted(set(value) - {"topic", "partition", "avoid"})
    if extra:
        raise UsageError(f"leader target: unknown field(s) {extra}; it takes topic, "
                         f"partition and avoid, got {value!r}")
    if "avoid" in value and value["avoid"] not in AVOIDABLE:
        raise UsageError(f"leader target: avoid must be one of {AVOIDABLE} (the brokers "
                         f"that coordinate the run's transactional ids), got "
                         f"{value['avoid']!r}")
    if "partition" in value:
        p = value["partition"]
        if not isinstance(p, int) or isinstance(p, bool) or p < 0:
            raise UsageError(f"leader target: partition must be a partition number (an "
                             f"integer >= 0), got {p!r}")
    elif "avoid" not in value:
        raise UsageError(f"leader target needs a partition (or avoid = \"coordinators\": "
                         f"any partition whose leader coordinates none of the run's "
                         f"transactional ids), got {value!r}")


def avoids_coordinators(target: dict) -> bool:
    """Whether ``target`` is a leader that must coordinate none of the run's
    transactional ids."""
    leader = target.get("leader")
    return isinstance(leader, dict) and leader.get("avoid") == "coordinators"


def pick_leader(states: dict, topic: str, first: int | None,
                coordinators: dict[str, int | None]) -> tuple[int, dict]:
    """The node to act on for ``{"leader": {topic, [partition,] avoid =
    "coordinators"}}`` (pure): the leader of ``first`` if it coordinates none of the run's
    transactional ids, else of the lowest-numbered partition of ``topic`` whose leader
    does not. ``states``: ``{(topic, partition): {"leader": node, ...}}``;
    ``coordinators``: transactional id -> its coordinator's node (None: not found).

    Returns (node, what the start records: the ``partition`` taken and ``avoided``, true,
    or false with ``why`` when every leader of the topic coordinates one: that leader is
    still the target, said so, not dropped). TargetError when the topic has no leader."""
    coord_nodes = {n for n in coordinators.values() if n is not None}
    led = sorted((p, int(s["leader"])) for (t, p), s in states.items()
                 if t == topic and s.get("leader") is not None and s["leader"] >= 0)
    if not led:
        raise TargetError(f"no partition of {topic} has a leader now")
    order = sorted(led, key=lambda pl: (pl[0] != first, pl[0]))
    for p, node in order:
        if node not in coord_nodes:
            return node, {"partition": p, "avoided": True}
    p, node = order[0]
    unknown = sorted(t for t, n in coordinators.items() if n is None)
    why = (f"every leader of {topic} ({', '.join(str(n) for n in sorted({n for _, n in led}))}) "
           f"coordinates one of the run's transactional ids")
    if unknown:
        why += f" (the coordinator of {', '.join(unknown)} is not known)"
    return node, {"partition": p, "avoided": False, "why": why}


def coordinators_of(bootstrap_servers: str, transactional_ids, **client_config) \
        -> dict[str, int | None]:
    """Transactional id -> the node of its transaction coordinator now (None: not
    found: the id unknown to the cluster yet, or the lookup failed)."""
    out: dict[str, int | None] = {tid: None for tid in transactional_ids}
    if not out:
        return out
    try:
        with admin(bootstrap_servers, **client_config) as a:
            for tid in out:
                try:
                    described = a.describe_transactions([tid])
                except Exception:  # noqa: BLE001 - this id's coordinator stays unknown
                    continue
                if tid in described:
                    out[tid] = int(described[tid].coordinator_id)
    except Exception:  # noqa: BLE001 - no admin client: every coordinator unknown, said so
        pass
    return out


def coordinator_detail(node: int | None, coordinators: dict[str, int | None],
                       pids: dict[str, str]) -> dict:
    """What a broker fault's start records of the run's transaction coordinators (pure):
    ``coordinators`` {transactional id: {"pid", "node"}} (node None: not found) and
    ``coordinator_of``, the transactional ids whose coordinator ``node`` is. {} when the
    run has no transactional id."""
    if not coordinators:
        return {}
    return {"coordinators": {t: {"pid": pids.get(t), "node": n}
                             for t, n in sorted(coordinators.items())},
            "coordinator_of": sorted(t for t, n in coordinators.items()
                                     if n is not None and n == node)}


def choose_broker(target: dict, bootstrap_servers: str, transactional_ids: dict[str, str],
                  **client_config) -> tuple[int | None, dict]:
    """The node a broker target names now, and what the fault's start records of the
    choice: the run's transaction coordinators (:func:`coordinator_detail`) and, for a
    leader that avoids them, the partition taken and whether it could (:func:`pick_leader`).
    ``transactional_ids``: the run's, each with its producer (transactional id -> pid)."""
    if target.get("all") is True:
        return None, {}
    coords = coordinators_of(bootstrap_servers, list(transactional_ids), **client_config)
    if avoids_coordinators(target):
        leader = target["leader"]
        states = partition_states(bootstrap_servers, [leader["topic"]], **client_config)
        node, chosen = pick_leader(states, leader["topic"], leader.get("partition"), coords)
    else:
        node, chosen = resolve_broker(target, bootstrap_servers, **client_config), {}
    return node, {**coordinator_detail(node, coords, transactional_ids), **chosen}


def resolve_broker(target: dict, bootstrap_servers: str, **client_config) -> int | None:
    """The node id a broker target names now; None for ``{"all": true}``.
    ``client_config``: the clients' security settings (an external secured cluster)."""
    (key, value), = target.items()
    if key == "all":
        return None
    if key == "node":
        return int(value)
    if key == "leader" and "partition" not in value:
        raise TargetError(f"leader target {value!r} needs the run's transaction "
                          "coordinators (choose_broker)")
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
