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

from verifier.harness.faults import kinds, triggers
from verifier.harness.faults.kinds import ScheduledFault
from verifier.rundata.errors import UsageError

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
    name = entry.get("kind")
    if name not in kinds.NAMES:  # a tuple: an unhashable kind is unknown too
        raise UsageError(f"{where}: unknown fault kind {name!r}; expected one of "
                         f"{kinds.NAMES}")
    kind = kinds.KINDS[name]
    target = entry.get("target")
    params = entry.get("params", {})
    if not isinstance(params, dict):
        raise UsageError(f"{where}: params must be an object")
    start = _time(entry.get("start"), "start", where, positive=False)
    duration = _time(entry.get("duration"), "duration", where, positive=True)
    try:
        kind.check_target(target, node_ids, processes)
        triggers.validate(name, params, _low(duration), kinds.TRIGGER_TAKERS)
        kind.check_params(triggers.split_params(params)[1])
    except UsageError as exc:
        raise UsageError(f"{where} ({name}): {exc}") from None
    return FaultSpec(name, target, start, duration, dict(params))


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
        draw = kinds.KINDS[spec.kind].draw
        if draw is not None:  # e.g. a probabilistic ack loss's seed
            draw(params, rng)
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
