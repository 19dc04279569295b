"""Shrinking a FAIL (DESIGN §10): the smallest fault schedule and workload that still
breaks the promise the same way.

Pure: a scenario is its ``Scenario.to_json()`` form (a plain dict), a run is a call of
``run(spec, label)`` that returns an :class:`Observed`; no Kafka, no files. The rules
come from STS (Scott et al., SIGCOMM 2014) adapted to runs that are not deterministic:

- **the fingerprint** is (column, forbidden anomaly kind): a candidate is kept only when a
  run of it FAILs that column with that kind, not on any failure;
- **calibration** re-runs the original first: a FAIL that reproduces in fewer than
  :data:`MIN_RATE` of its runs is reported as too rare to shrink, with the rate;
- **the re-run rule**: a candidate fails at its first reproducing run; it passes only after
  :func:`reruns_needed` clean runs for the measured rate (95 % sure a kept fault is
  needed); a budget cut mid-way leaves it undecided (not kept);
- **candidates in order**: drop faults (one at a time up to :data:`FEW_FAULTS`, ddmin
  above), halve fault durations, reduce the workload (modes not involved, partitions,
  rate), move the faults earlier, shorten the load;
- tried candidates are cached; the best schedule so far is kept, so a cut budget still
  returns one; the result is confirmed by :attr:`Shrinker.confirm` fresh runs;
- **the walk back**: a result none of whose confirmation runs reproduces (a candidate is
  kept on one FAIL, so a rare one can be kept by luck) is not returned: the kept steps are
  undone from the last, each earlier best confirmed in turn, until one reproduces; the
  original (calibrated) when none does or the budget ends first.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

from verifier.orchestration.shrink_result import (
    Fingerprint,
    Observed,
    Result,
    Trial,
    canonical,
    reruns_needed,
)
from verifier.orchestration.shrink_specs import (
    describe,
    fault_name,
    fmt,
    halve,
    highest,
    lowest,
    names,
    scale,
    split,
    with_faults,
)

#: below this calibrated reproduction rate a FAIL is reported, not shrunk (the re-run
#: rule would need 9+ clean runs per candidate)
MIN_RATE = 0.3
#: one-at-a-time removal up to this many faults (n runs), delta debugging above
FEW_FAULTS = 8
#: the smallest fault duration and load rate a candidate goes down to
MIN_FAULT_S = 1.0
MIN_RATE_PER_S = 10.0
MIN_START_S = 2.0
#: load left after the last fault's end when the run is shortened
TAIL_S = 10.0


class _BudgetSpent(Exception):
    """Not enough time left for another run (and the confirmation runs)."""


Runner = Callable[[dict, str], Observed]


class Shrinker:
    """Shrink ``original`` (a ``Scenario.to_json()`` dict) while ``run`` keeps showing
    ``fingerprint``, within ``budget_s`` seconds of ``clock``."""

    def __init__(self, original: dict, fingerprint: Fingerprint, run: Runner, *,
                 budget_s: float, est_run_s: float, calibrate: int = 3, confirm: int = 3,
                 column_modes: tuple[str, ...] = (), clock: Callable[[], float] = time.monotonic,
                 say: Callable[[str], None] = print) -> None:
        self.original = copy.deepcopy(original)
        self.best = copy.deepcopy(original)
        self.fingerprint = fingerprint
        self._run = run
        self.budget_s = budget_s
        self.est_run_s = est_run_s
        self.calibrate = calibrate
        self.confirm = confirm
        #: the preset modes the column needs (empty: it needs input, not a given mode)
        self.column_modes = column_modes
        self.clock = clock
        self.say = say
        self.rate = 1.0
        self.reruns = 1
        self.trials: list[Trial] = []
        self.cache: dict[str, Trial] = {}
        self._t0 = clock()
        self._durations: list[float] = []
        self._label = ""
        self.walk_back: list[Trial] = []

    # ----- budget and runs ----------------------------------------------------------

    def left(self) -> float:
        return self.budget_s - (self.clock() - self._t0)

    def _est(self) -> float:
        return (sum(self._durations) / len(self._durations) if self._durations
                else self.est_run_s)

    def runs_done(self) -> int:
        return len(self._durations)

    def _one_run(self, spec: dict, label: str, reserve: int = 0) -> Observed:
        """One run, if the budget leaves room for it and ``reserve`` more."""
        if self.left() < self._est() * (1 + reserve):
            raise _BudgetSpent(label)
        self._progress(label)
        obs = self._run(copy.deepcopy(spec), label)
        self._durations.append(obs.seconds)
        return obs

    def _progress(self, label: str) -> None:
        left = max(0.0, self.left())
        self.say(f"shrink: {label} | run {self.runs_done() + 1} | best so far: "
                 f"{describe(self.best)} | {left / 60:.0f} min left")

    # ----- the re-run rule -----------------------------------------------------------

    def try_candidate(self, label: str, spec: dict) -> bool:
        """Does ``spec`` fail the same way? Its first reproducing run says yes; only
        :attr:`reruns` clean runs say no. A yes makes it the best so far."""
        key = canonical(spec)
        if key in self.cache:
            seen = self.cache[key]
            self.trials.append(Trial(label, "cached"))
            self.say(f"shrink: {label}: tried before ({seen.outcome})")
            return seen.outcome == "fails"
        trial = Trial(label, "undecided", spec=copy.deepcopy(spec))
        self.trials.append(trial)
        self.cache[key] = trial
        try:
            for i in range(self.reruns):
                # a kept candidate needs its confirmation runs and one step of the
                # walk back: leave room for them
                obs = self._one_run(spec, f"{label} ({i + 1}/{self.reruns})",
                                    reserve=2 * self.confirm)
                trial.runs.append(obs)
                if self.fingerprint in obs.fingerprints:
                    trial.outcome = "fails"
                    self.best = copy.deepcopy(spec)
                    self.say(f"shrink: {label}: FAILs the same way: the new best")
                    return True
        except _BudgetSpent:
            self.say(f"shrink: {label}: undecided, the budget is spent")
            raise
        trial.outcome = "passes"
        self.say(f"shrink: {label}: {len(trial.runs)} clean runs: the removed part is "
                 "needed")
        return False

    # ----- the search ----------------------------------------------------------------

    def shrink(self) -> Result:
        calibration: list[Observed] = []
        stopped = "done"
        try:
            for i in range(self.calibrate):
                calibration.append(self._one_run(self.original,
                                                 f"calibrate: the original ({i + 1}/"
                                                 f"{self.calibrate})"))
        except _BudgetSpent:
            stopped = "budget"
        hits = sum(self.fingerprint in o.fingerprints for o in calibration)
        self.rate = hits / len(calibration) if calibration else 0.0
        self.reruns = reruns_needed(self.rate)
        if stopped == "budget" and not calibration:
            return self._result(calibration, [], "budget")
        if self.rate < MIN_RATE:
            return self._result(calibration, [], "too-rare" if hits else "not-reproduced")
        self.say(f"shrink: the original reproduces in {hits}/{len(calibration)} runs: a "
                 f"candidate passes after {self.reruns} clean runs")
        if stopped == "done":
            try:
                for step in (self._drop_faults, self._halve_durations, self._reduce_workload,
                             self._earlier, self._shorten):
                    step()
            except _BudgetSpent:
                stopped = "budget"
        confirmation: list[Observed] = []
        if canonical(self.best) != canonical(self.original):
            # the reserve was kept for these; slow runs may still cut them short
            confirmation, _ = self._confirm(self.best, "confirm")
            if confirmation and not self._reproduced(confirmation):
                self._walk_back()
        return self._result(calibration, confirmation, stopped)

    def _confirm(self, spec: dict, label: str) -> tuple[list[Observed], bool]:
        """:attr:`confirm` runs of ``spec``, as many as the budget leaves; and whether
        the budget cut them short."""
        runs: list[Observed] = []
        try:
            for i in range(self.confirm):
                runs.append(self._one_run(spec, f"{label} ({i + 1}/{self.confirm})"))
        except _BudgetSpent:
            return runs, True
        return runs, False

    def _reproduced(self, runs: list[Observed]) -> bool:
        return any(self.fingerprint in o.fingerprints for o in runs)

    def _result(self, calibration, confirmation, stopped) -> Result:
        return Result(self.original, self.best, self.fingerprint, calibration, self.rate,
                      self.reruns, self.trials, confirmation, stopped,
                      self.clock() - self._t0, self.walk_back)

    def _walk_back(self) -> None:
        """The best did not reproduce in its confirmation: undo the kept steps from the
        last, confirming each earlier best, until one reproduces; else the original
        (its calibration reproduced), also when the budget ends first."""
        kept = [t for t in self.trials if t.outcome == "fails"]
        self.say(f"shrink: the result did not reproduce in {self.confirm} confirmation "
                 "runs: undoing the kept steps from the last")
        for i in range(len(kept) - 1, -1, -1):
            kept[i].outcome = "undone"
            if i == 0:
                break
            step = Trial(f"the best after '{kept[i - 1].label}'", "not confirmed",
                         spec=kept[i - 1].spec)
            step.runs, spent = self._confirm(step.spec, f"walk back: confirm {step.label}")
            if step.runs:
                self.walk_back.append(step)
            if self._reproduced(step.runs):
                step.outcome = "confirmed"
                self.best = copy.deepcopy(step.spec)
                self.say(f"shrink: {step.label} reproduces: kept")
                return
            if spent:
                self.say("shrink: the budget is spent in the walk back")
                for t in kept[:i]:
                    t.outcome = "undone"
                break
        self.best = copy.deepcopy(self.original)
        self.say("shrink: no shrunk step reproduced: the original is kept")

    # ----- the candidates, in order --------------------------------------------------

    def _drop_faults(self) -> None:
        faults = self.best.get("faults") or []
        if len(faults) > FEW_FAULTS:
            self._ddmin()
            return
        i = 0
        while i < len(self.best["faults"]):
            fault = self.best["faults"][i]
            spec = with_faults(self.best, self.best["faults"][:i] + self.best["faults"][i + 1:])
            if not self.try_candidate(f"drop fault {fault_name(fault)}", spec):
                i += 1  # kept: the next one; dropped: the next one is now at i

    def _ddmin(self) -> None:
        """Delta debugging over the faults (Zeller's ddmin, complements only: a run that
        still fails costs one run, a passing one :attr:`reruns`, and with few faults
        needed among many it is dropping a chunk that succeeds)."""
        items = list(self.best["faults"])
        n = 2
        while len(items) >= 2:
            for chunk in split(items, n):
                rest = [f for f in items if not any(f is c for c in chunk)]
                if self.try_candidate(f"drop faults {names(chunk)}",
                                      with_faults(self.best, rest)):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)

    def _halve_durations(self) -> None:
        for i in range(len(self.best.get("faults") or [])):
            while True:
                fault = self.best["faults"][i]
                halved = halve(fault.get("duration"), MIN_FAULT_S)
                if halved is None:
                    break
                spec = copy.deepcopy(self.best)
                spec["faults"][i]["duration"] = halved
                if not self.try_candidate(f"halve {fault_name(fault)}'s duration "
                                          f"{fmt(fault['duration'])} -> {fmt(halved)} s",
                                          spec):
                    break

    def _reduce_workload(self) -> None:
        w = self.best["workload"]
        keep = [m for m in w["modes"] if m in self.column_modes] or list(w["modes"][:1])
        if len(keep) < len(w["modes"]):
            self._try_workload(f"modes {', '.join(w['modes'])} -> {', '.join(keep)}",
                               modes=keep)
        if self.best["workload"]["partitions"] > 1:
            self._try_workload(f"partitions {self.best['workload']['partitions']} -> 1",
                               partitions=1)
        while self.best["workload"]["rate"] / 2 >= MIN_RATE_PER_S:
            rate = self.best["workload"]["rate"]
            if not self._try_workload(f"rate {fmt(rate)} -> {fmt(rate / 2)} records/s",
                                      rate=rate / 2):
                break

    def _try_workload(self, label: str, **changes) -> bool:
        spec = copy.deepcopy(self.best)
        spec["workload"].update(changes)
        return self.try_candidate(label, spec)

    def _earlier(self) -> None:
        while self.best.get("faults"):
            first = min(lowest(f.get("start", 0)) for f in self.best["faults"])
            if first / 2 < MIN_START_S:
                return
            spec = copy.deepcopy(self.best)
            for f in spec["faults"]:
                if "start" in f:
                    f["start"] = scale(f["start"], 0.5)
            if not self.try_candidate(f"faults earlier (first at {fmt(first)} -> "
                                      f"{fmt(first / 2)} s)", spec):
                return

    def _shorten(self) -> None:
        while True:
            total = float(self.best["workload"]["duration_s"])
            end = max((highest(f.get("start", 0)) + highest(f.get("duration", 0))
                       for f in self.best.get("faults") or []), default=0.0)
            shorter = round(max(end + TAIL_S, total / 2), 3)
            if shorter > total * 0.9:
                return
            spec = copy.deepcopy(self.best)
            spec["workload"]["duration_s"] = shorter
            if not self.try_candidate(f"load {fmt(total)} -> {fmt(shorter)} s", spec):
                return
