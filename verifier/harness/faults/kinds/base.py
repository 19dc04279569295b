"""What a fault kind is to the nemesis: the fault it is given, what it acts on, and what
it declares about itself (:class:`Kind`).

A kind's start and heal each return a ``detail`` dict for the nemesis history
(docs/formats.md §3). A start that raises :class:`NotApplied` did nothing (history
``fail``); any other error leaves the outcome open (history ``info``) and the fault is
still healed. A heal may return :class:`Settling` when its target takes a while to be
back.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.harness.faults import triggers
from verifier.harness.faults.targets import (
    ProcessTarget,
    TargetError,
    avoids_coordinators,
    choose_broker,
    resolve_broker,
    validate_broker_target,
)
from verifier.judge.faults.family import Family
from verifier.rundata.errors import UsageError, VerifierError


@dataclass(frozen=True)
class ScheduledFault:
    """One fault of a schedule: concrete times, an id that ties its start to its heal."""

    id: int
    kind: str
    target: dict
    start: float
    duration: float
    params: dict

    @property
    def heal_at(self) -> float:
        return self.start + self.duration

    @property
    def trigger(self) -> triggers.Trigger | None:
        """The state the start waits for (params ``trigger``, ``within``), if any."""
        return triggers.trigger_of(self.kind, self.params, self.duration)

    @property
    def action_params(self) -> dict:
        """The params the fault itself takes (a proxy rule's), without the trigger's."""
        return triggers.split_params(self.params)[1]

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "target": self.target, "start": self.start,
                "duration": self.duration, "params": self.params}


class NotApplied(VerifierError):
    """The fault was not applied at all (its target did not exist or was not running).
    ``detail``: what the start set up and undid (a proxy rule removed when its trigger
    never came): the history's ``fail`` line keeps it, so the verdict knows whose it was."""

    def __init__(self, message: str, detail: dict | None = None) -> None:
        super().__init__(message)
        self.detail = detail


@dataclass
class Settling:
    """A heal that has acted (``detail``) but whose target takes a while to be back:
    ``wait()`` blocks until it is and returns more detail. The nemesis waits for it off
    its schedule, so a broker restart does not hold back the faults planned meanwhile,
    and writes the heal's ``ok`` line when it returns."""

    detail: dict
    wait: Callable[[], dict]


#: the parts of a run a kind may need (:attr:`Kind.needs`), as FaultEnv names them:
#: the proxy (proxy rules), the cluster's broker processes (signals), a network
#: partition (the embedded cluster's namespace, or containers)
PARTS = ("cluster", "proxy", "partition")


@dataclass
class FaultEnv:
    """Everything a fault can act on in one run; absent parts disable their faults."""

    bootstrap_servers: str
    cluster: object | None = None  # verifier.harness.cluster.LocalCluster
    proxy: object | None = None  # verifier.harness.faults.control.ProxyClient
    processes: dict[str, ProcessTarget] = field(default_factory=dict)
    partition: object | None = None  # verifier.harness.faults.partition.Partition
    ready_timeout: float = 180.0
    #: the clients' security settings (kafka-python names) for the tool's own lookups
    client_config: dict = field(default_factory=dict)
    #: the run's producer topics: a broker fault records the partitions its target led
    #: (start detail ``leads``, the exposure of each column: verifier.judge.faults.broker)
    topics: tuple[str, ...] = ()
    #: the run's transactional ids, each with its producer (transactional id -> pid): a
    #: broker fault records their coordinators (start detail ``coordinators``), a leader
    #: target may avoid them
    transactional_ids: dict[str, str] = field(default_factory=dict)

    def require(self, part: str, kind: str):
        value = getattr(self, part)
        if value is None:
            raise NotApplied(f"{kind} needs a {part}, and this run has none")
        return value


def broker_of(fault: ScheduledFault, env: FaultEnv) -> int | None:
    """The node the fault's broker target names now (None: every broker)."""
    if avoids_coordinators(fault.target):
        return broker_choice(fault, env)[0]
    try:
        return resolve_broker(fault.target, env.bootstrap_servers, **env.client_config)
    except TargetError as exc:
        raise NotApplied(str(exc)) from exc


def broker_choice(fault: ScheduledFault, env: FaultEnv) -> tuple[int | None, dict]:
    """The node the fault's broker target names now, and what its start records of the
    choice: the run's transaction coordinators then, whether the node is one of them,
    and for a leader that avoids them the partition taken (targets.choose_broker)."""
    try:
        return choose_broker(fault.target, env.bootstrap_servers, env.transactional_ids,
                             **env.client_config)
    except TargetError as exc:
        raise NotApplied(str(exc)) from exc


# ----- what a kind declares -------------------------------------------------------------

#: (fault, env, state[, gate]) -> the detail of its start or heal
Handler = Callable[..., "dict | Settling"]
#: (target, the cluster's node ids or None, the run's process names or None): UsageError
#: unless the kind can act on the target
TargetCheck = Callable[[object, "list[int] | None", "set[str] | None"], None]


def process_target(target, node_ids, processes) -> None:
    """``{"process": NAME}``, a process the run has (when ``processes`` is known)."""
    if not (isinstance(target, dict) and list(target) == ["process"]
            and isinstance(target["process"], str)):
        raise UsageError(f"target must be {{\"process\": NAME}}, not {target!r}")
    if processes is not None and target["process"] not in processes:
        raise UsageError(f"unknown process {target['process']!r}; known: "
                         f"{sorted(processes)}")


def broker_target(allow_all: bool) -> TargetCheck:
    """A broker selector (verifier.harness.faults.targets); ``{"all": true}`` if allowed."""
    def check(target, node_ids, processes) -> None:
        validate_broker_target(target, node_ids, allow_all=allow_all)

    return check


def all_target(every: str) -> TargetCheck:
    """Only ``{"all": true}``: ``every`` says what it acts on."""
    def check(target, node_ids, processes) -> None:
        if target != {"all": True}:
            raise UsageError(f"target must be {{\"all\": true}} ({every}), not {target!r}")

    return check


def no_params(params: dict) -> None:
    if params:
        raise UsageError(f"takes no params, got {sorted(params)}")


@dataclass(frozen=True)
class Kind:
    """One fault kind the nemesis can run: the running half of a kind whose family
    (verifier.judge.faults) says which columns it concerns and how it is counted."""

    name: str
    family: Family
    start: Handler
    heal: Handler
    check_target: TargetCheck
    #: UsageError unless the params (without the trigger's) suit the kind
    check_params: Callable[[dict], None] = no_params
    #: the triggers its start may wait for (verifier.harness.faults.triggers); its start
    #: then takes the nemesis's gate
    triggers: tuple[str, ...] = ()
    #: the part of the run it acts on (:data:`PARTS`), None: any run can run it
    needs: str | None = None
    #: acts on the brokers: waits for a broker still restarting from a heal before
    #: (one broker action at a time)
    on_brokers: bool = False
    #: why its target would not meet it at work now (the nemesis holds the start back)
    not_ready: Callable[[ScheduledFault, FaultEnv], str | None] | None = None
    #: draws what its params leave to the schedule's seed (in spec order)
    draw: Callable[[dict, random.Random], None] | None = None
    #: the proxy rule kind it sets (verifier.harness.faults.rules), if a proxy fault
    rule: str | None = None
    #: its proxy rule reports hold, release and answer events (copied into the history)
    hold_events: bool = False

    def __post_init__(self) -> None:
        if self.name not in self.family.kinds:
            raise ValueError(f"fault kind {self.name!r} is not one of the {self.family.name} "
                             f"family's {self.family.kinds} (verifier.judge.faults)")
        if self.needs is not None and self.needs not in PARTS:
            raise ValueError(f"fault kind {self.name!r} needs {self.needs!r}, not one of {PARTS}")
