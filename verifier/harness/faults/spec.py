"""Declarative fault specs and the seeded schedule built from them.

A spec file (JSON, or TOML with ``[[faults]]`` tables) lists faults:

    {"faults": [
      {"kind": "ack-loss", "target": {"node": 1}, "start": 5, "duration": 10,
       "params": {"next": 3}},
      {"kind": "broker-kill", "target": {"leader": {"topic": "t", "partition": 0}},
       "start": [10, 20], "duration": [5, 10]}
    ]}

``start`` and ``duration`` are seconds from the start of the load phase, either a
number or a ``[low, high]`` range from which the seed picks. The same seed always gives
the same schedule (ranges, and the seed of every probabilistic proxy rule, are drawn
from one ``random.Random(seed)`` in spec order). Everything is validated before anything
starts: an unknown kind or target, bad parameters, a fault that could end after the run,
or a malformed file is a :class:`~verifier.rundata.errors.UsageError`.

``params.trigger`` and ``params.within`` make a fault wait for the state that makes it
bite (verifier.harness.faults.triggers); they are checked here with the rest.
"""

from __future__ import annotations

import json
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from verifier.harness.faults import triggers
from verifier.harness.faults.rules import Rule, RuleError
from verifier.harness.faults.targets import validate_broker_target
from verifier.rundata.errors import UsageError

#: proxy-rule faults: kind -> the proxy rule kind it sets
PROXY_KINDS = {"ack-loss": "drop_response", "latency": "latency", "blackhole": "blackhole",
               "reset": "reset", "hold": "hold"}
BROKER_KINDS = ("broker-kill", "broker-pause", "network-partition")
#: checkpoint-lost: a pipeline's driver killed and restarted on a fresh checkpoint (a
#: redeploy), the old one kept aside (verifier.rundata.pipelines)
#: process-pause: SIGSTOP a process for the window, SIGCONT at heal (a GC pause, a frozen
#: container, a generator stalled while the faults meant for it act)
#: executor-kill, worker-kill: a pipeline's executor, or a worker with its executors, on
#: the Spark standalone cluster the run starts (verifier.harness.faults.spark_faults); the
#: target is the pipeline's process, as for a driver kill
SPARK_KINDS = ("executor-kill", "worker-kill")
PROCESS_KINDS = ("producer-kill", "observer-kill", "process-kill", "checkpoint-lost",
                 "process-pause", *SPARK_KINDS)
#: broker settings changed with the admin API for the fault's window (a scenario's
#: dynamic ``[broker]`` table), restored at heal; works on any cluster
CONFIG_KINDS = ("broker-config",)
#: the run's topics keep records only seconds for the window: unread records deleted
#: (verifier.harness.faults.retention)
TOPIC_KINDS = ("retention",)
KINDS = (*PROXY_KINDS, *BROKER_KINDS, *PROCESS_KINDS, *CONFIG_KINDS, *TOPIC_KINDS)
SPEC_FIELDS = {"kind", "target", "start", "duration", "params"}


@dataclass(frozen=True)
class FaultSpec:
    """One fault as written: times may still be ranges."""

    kind: str
    target: dict
    start: float | tuple[float, float]
    duration: float | tuple[float, float]
    params: dict = field(default_factory=dict)

    @property
    def latest_end(self) -> float:
        return _high(self.start) + _high(self.duration)


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


@dataclass(frozen=True)
class Schedule:
    seed: int
    run_seconds: float
    faults: tuple[ScheduledFault, ...]

    def timeline(self) -> list[tuple[float, str, ScheduledFault]]:
        """Every start and heal in time order; at equal times heals come first."""
        events = [(f.start, "start", f) for f in self.faults]
        events += [(f.heal_at, "heal", f) for f in self.faults]
        return sorted(events, key=lambda e: (e[0], e[1] != "heal", e[2].id))

    def to_json(self) -> dict:
        return {"seed": self.seed, "run_seconds": self.run_seconds,
                "faults": [f.to_json() for f in self.faults]}


def _high(value) -> float:
    return value[1] if isinstance(value, tuple) else value


def _low(value) -> float:
    return value[0] if isinstance(value, tuple) else value


def _time(value, name: str, where: str, positive: bool) -> float | tuple[float, float]:
    ok_number = isinstance(value, int | float) and not isinstance(value, bool)
    if ok_number and (value > 0 or (value == 0 and not positive)):
        return float(value)
    if (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
            and 0 <= value[0] <= value[1] and (value[0] > 0 or not positive)):
        return (float(value[0]), float(value[1]))
    need = "> 0" if positive else ">= 0"
    raise UsageError(f"{where}: {name} must be a number {need} or a [low, high] range, "
                     f"not {value!r}")


def parse_spec(entry: object, where: str, node_ids: list[int] | None = None,
               processes: set[str] | None = None) -> FaultSpec:
    """Validate one spec entry; ``where`` names it in error messages."""
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: a fault is an object with {sorted(SPEC_FIELDS)}")
    unknown = set(entry) - SPEC_FIELDS
    if unknown:
        raise UsageError(f"{where}: unknown fields {sorted(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise UsageError(f"{where}: unknown fault kind {kind!r}; expected one of {KINDS}")
    target = entry.get("target")
    params = entry.get("params", {})
    if not isinstance(params, dict):
        raise UsageError(f"{where}: params must be an object")
    start = _time(entry.get("start"), "start", where, positive=False)
    duration = _time(entry.get("duration"), "duration", where, positive=True)
    try:
        _validate_target(kind, target, node_ids, processes)
        triggers.validate(kind, params, _low(duration))
        _validate_params(kind, triggers.split_params(params)[1])
    except UsageError as exc:
        raise UsageError(f"{where} ({kind}): {exc}") from None
    return FaultSpec(kind, target, start, duration, dict(params))


def _validate_target(kind: str, target, node_ids, processes) -> None:
    if kind in PROCESS_KINDS:
        if not (isinstance(target, dict) and list(target) == ["process"]
                and isinstance(target["process"], str)):
            raise UsageError(f"target must be {{\"process\": NAME}}, not {target!r}")
        if processes is not None and target["process"] not in processes:
            raise UsageError(f"unknown process {target['process']!r}; known: "
                             f"{sorted(processes)}")
        return
    if kind in CONFIG_KINDS or kind in TOPIC_KINDS:
        if target != {"all": True}:
            every = "every broker" if kind in CONFIG_KINDS else "every topic of the run"
            raise UsageError(f"target must be {{\"all\": true}} ({every}), not {target!r}")
        return
    validate_broker_target(target, node_ids, allow_all=kind in PROXY_KINDS)


def _validate_params(kind: str, params: dict) -> None:
    if kind in PROXY_KINDS:
        if "kind" in params or "broker" in params:
            raise UsageError("params may not set the rule's kind or broker")
        try:
            Rule.from_json({"kind": PROXY_KINDS[kind], **params}, 0)
        except RuleError as exc:
            raise UsageError(str(exc)) from None
    elif kind in CONFIG_KINDS:
        settings = params.get("settings")
        if set(params) != {"settings"} or not isinstance(settings, dict) or not settings or \
                not all(isinstance(k, str) and isinstance(v, str) for k, v in settings.items()):
            raise UsageError("params must be {\"settings\": {NAME: VALUE, ...}} with string "
                             f"values, not {params!r}")
    elif kind in TOPIC_KINDS:
        from verifier.harness.faults.retention import validate_params

        validate_params(params)
    elif params:
        raise UsageError(f"takes no params, got {sorted(params)}")


def build_schedule(specs: list[FaultSpec], seed: int, run_seconds: float) -> Schedule:
    """Draw every range and rule seed from ``random.Random(seed)``, in spec order."""
    for i, spec in enumerate(specs, 1):
        if spec.latest_end > run_seconds:
            raise UsageError(
                f"fault {i} ({spec.kind}) may end at {spec.latest_end:g}s, after the "
                f"{run_seconds:g}s run; faults must heal before the run drains")
    rng = random.Random(seed)
    drafted = []
    for spec in specs:
        start = rng.uniform(*spec.start) if isinstance(spec.start, tuple) else spec.start
        duration = (rng.uniform(*spec.duration) if isinstance(spec.duration, tuple)
                    else spec.duration)
        params = dict(spec.params)
        if spec.kind == "ack-loss" and "probability" in params and "seed" not in params:
            params["seed"] = rng.randrange(2**31)
        drafted.append((round(start, 3), round(duration, 3), spec, params))
    drafted.sort(key=lambda d: d[0])  # stable: equal starts keep spec order
    faults = tuple(ScheduledFault(i, s.kind, s.target, start, duration, params)
                   for i, (start, duration, s, params) in enumerate(drafted, 1))
    return Schedule(seed, run_seconds, faults)


def load_specs(path: Path, node_ids: list[int] | None = None,
               processes: set[str] | None = None) -> list[FaultSpec]:
    """Read and validate a spec file (``.json`` or ``.toml``)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read fault spec {path}: {exc}") from exc
    try:
        data = tomllib.loads(text) if str(path).endswith(".toml") else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"fault spec {path} is malformed: {exc}") from exc
    entries = data.get("faults") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise UsageError(f"fault spec {path}: expected a list of faults under \"faults\"")
    return [parse_spec(e, f"{path} fault {i}", node_ids, processes)
            for i, e in enumerate(entries, 1)]


def load_schedule(path: Path, seed: int, run_seconds: float, node_ids: list[int] | None = None,
                  processes: set[str] | None = None) -> Schedule:
    return build_schedule(load_specs(path, node_ids, processes), seed, run_seconds)
