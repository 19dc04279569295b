"""What a shrink (:mod:`verifier.orchestration.shrink`) observes and returns, pure: a
run's fingerprint, the re-run rule's count, each candidate's runs, and the result with the
runs its reproduction rate is read from (the confirmation, a walk back's confirmed step,
or the calibration)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fingerprint:
    """How a run FAILed: its column and one forbidden anomaly kind."""

    column: str
    kind: str

    def __str__(self) -> str:
        return f"{self.column} {self.kind}"


def fingerprints_of(doc: dict) -> frozenset[Fingerprint]:
    """Every (FAIL column, forbidden kind) of a run's verdict document."""
    return frozenset(Fingerprint(c["name"], k) for c in doc.get("columns", ())
                     if c.get("verdict") == "FAIL" for k in c.get("forbidden") or ())


def reruns_needed(rate: float, confidence: float = 0.95) -> int:
    """Clean runs before a candidate counts as passing: the smallest k with
    (1 - rate)^k <= 1 - confidence (0.9 -> 2, 0.7 -> 3, 0.5 -> 5, 0.3 -> 9). A rate
    measured as 1.0 on a few runs is taken as 0.9: two clean runs, never one."""
    p = min(max(rate, 0.01), 0.9)
    return max(1, math.ceil(math.log(1 - confidence) / math.log(1 - p)))


@dataclass(frozen=True)
class Observed:
    """One run of a candidate: its fingerprints, wall time and folder."""

    fingerprints: frozenset[Fingerprint]
    seconds: float
    run_dir: str = ""
    verdict: str = ""  # the shrunk column's verdict in this run (for the report)


@dataclass
class Trial:
    """A candidate and what its runs showed: ``fails`` (reproduced: kept), ``passes``
    (all its clean runs: rejected), ``undecided`` (the budget ran out), ``cached``."""

    label: str
    outcome: str
    runs: list[Observed] = field(default_factory=list)
    #: the candidate itself (the walk back returns to a kept one)
    spec: dict | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        return {"candidate": self.label, "outcome": self.outcome,
                "runs": [{"verdict": o.verdict, "seconds": round(o.seconds, 1),
                          "run_dir": o.run_dir} for o in self.runs]}


def canonical(spec: dict) -> str:
    """The cache key of a candidate: its spec as sorted JSON."""
    return json.dumps(spec, sort_keys=True, default=str)


@dataclass
class Result:
    original: dict
    best: dict
    fingerprint: Fingerprint
    calibration: list[Observed]
    rate: float
    reruns: int
    trials: list[Trial]
    confirmation: list[Observed]
    stopped: str  # done | budget | too-rare | not-reproduced
    seconds: float
    #: the walk back after a confirmation that did not reproduce: one entry per earlier
    #: best confirmed ("confirmed" or "not confirmed"), the last the one returned
    walk_back: list[Trial] = field(default_factory=list)

    @property
    def accepted(self) -> list[str]:
        return [t.label for t in self.trials if t.outcome == "fails"]

    @property
    def undone(self) -> list[str]:
        """The kept steps the walk back undid (their result did not reproduce)."""
        return [t.label for t in self.trials if t.outcome == "undone"]

    @property
    def runs(self) -> int:
        return (len(self.calibration) + len(self.confirmation)
                + sum(len(t.runs) for t in self.trials)
                + sum(len(t.runs) for t in self.walk_back))

    @property
    def shrunk(self) -> bool:
        return canonical(self.best) != canonical(self.original)

    def confirmed_rate(self) -> tuple[int, int]:
        """(reproducing runs, runs) of the result: the confirmation's (the confirmed
        step's after a walk back), or the calibration's when nothing was removed."""
        if not self.shrunk:
            runs = self.calibration
        elif self.walk_back:
            runs = self.walk_back[-1].runs
        else:
            runs = self.confirmation
        return sum(self.fingerprint in o.fingerprints for o in runs), len(runs)
