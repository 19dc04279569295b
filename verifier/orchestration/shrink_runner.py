"""The runs of `verifier shrink`: each candidate scenario through the chaos machinery
(:func:`verifier.orchestration.chaos.run_one`) on the environment and options the
failed run had, and the outputs (shrunk.toml, shrink.json, the report)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from verifier.orchestration.chaos import run_one
from verifier.orchestration.planning import RunOptions, validate_scenario
from verifier.orchestration.scenario import parse_scenario
from verifier.orchestration.shrink_plan import FailedRun, scenario_toml
from verifier.orchestration.shrink_result import Observed, Result, Trial, fingerprints_of
from verifier.orchestration.shrink_specs import count, describe
from verifier.rundata.formats import write_json


class ChaosRunner:
    """``run(spec, label)`` for :class:`verifier.orchestration.shrink.Shrinker`: one
    chaos run of the candidate, its run folder under ``OUT/runs/NN/``, the run's own
    output (tables, phases) in ``log``. Call it inside ``with env:``."""

    def __init__(self, env, opts: RunOptions, spark, out: Path, name: str, column: str,
                 log) -> None:
        self.env, self.opts, self.spark = env, opts, spark
        self.out, self.name, self.column, self.log = out, name, column, log
        self.n = 0

    def __call__(self, spec: dict, label: str) -> Observed:
        self.n += 1
        path = self.out / "candidates" / f"{self.n:02d}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(scenario_toml(spec, [label]))
        scenario = parse_scenario(path.read_text(), self.name, str(path))
        problems = validate_scenario(scenario, self.opts, self.env)
        if problems:  # a candidate the planner refuses shows nothing: a clean run
            print(f"candidate {self.n} refused: {'; '.join(problems)}", file=self.log)
            return Observed(frozenset(), 0.0, verdict="refused")
        t0 = time.monotonic()
        print(f"\n##### candidate run {self.n}: {label}", file=self.log, flush=True)
        doc = run_one(self.env, scenario, replace(self.opts, out=self.out / "runs" /
                                                  f"{self.n:02d}"),
                      self.spark, out=self.log)
        col = next((c for c in doc.get("columns", ()) if c["name"] == self.column), {})
        return Observed(fingerprints_of(doc), time.monotonic() - t0,
                        run_dir=str(doc.get("run_dir", "")),
                        verdict=col.get("verdict", "no column"))


def write_outputs(result: Result, failed: FailedRun, out: Path, command: str
                  ) -> dict[str, Path]:
    """shrunk.toml (the best scenario, ``command`` that runs it and its rate in its
    header), shrink.json and shrink.md (the report); returns their paths."""
    hits, n = result.confirmed_rate()
    shrunk = out / "shrunk.toml"
    header = [f"verifier shrink of {failed.run_dir} ({result.fingerprint})",
              f"run it: {command}",
              f"reproduces: {hits}/{n} runs ({rate_source(result)})"]
    shrunk.write_text(scenario_toml(result.best, header))
    report = out / "shrink.md"
    report.write_text("\n".join(report_lines(result, failed, command)) + "\n")
    write_json(out / "shrink.json", "shrink", {
        "run_dir": str(failed.run_dir), "column": result.fingerprint.column,
        "kind": result.fingerprint.kind, "stopped": result.stopped,
        "rate": result.rate, "reruns": result.reruns,
        "calibration": [o.verdict for o in result.calibration],
        "confirmation": {"reproduced": hits, "runs": n}, "runs": result.runs,
        "seconds": round(result.seconds, 1), "removed": result.accepted,
        "undone": result.undone, "walk_back": [t.to_json() for t in result.walk_back],
        "before": describe(result.original), "after": describe(result.best),
        "trials": [t.to_json() for t in result.trials], "command": command,
    }, indent=True)
    return {"scenario": shrunk, "report": report, "json": out / "shrink.json"}


STOPPED = {
    "done": "every candidate tried",
    "budget": "the budget was spent (the best schedule so far is kept)",
    "too-rare": "the FAIL reproduces too rarely to shrink within the budget",
    "not-reproduced": "the FAIL did not reproduce in any calibration run",
}


def rate_source(result: Result) -> str:
    """Which runs the result's reproduction rate comes from."""
    if not result.shrunk:
        return ("the original, kept by the walk back: calibration" if result.walk_back
                or result.undone else "nothing removed: calibration")
    if result.walk_back:
        return f"confirmation of {result.walk_back[-1].label}, after the walk back"
    return "confirmation"


def report_lines(result: Result, failed: FailedRun, command: str) -> list[str]:
    hits = sum(result.fingerprint in o.fingerprints for o in result.calibration)
    ok, n = result.confirmed_rate()
    lines = [f"# Shrink of {failed.run_dir}", "",
             f"- fingerprint: {result.fingerprint} (column, forbidden anomaly kind)",
             f"- calibration: the original reproduced in {hits}/{len(result.calibration)} "
             f"runs (rate {result.rate:.2f}); a candidate passed after {result.reruns} "
             "clean runs",
             f"- stopped: {STOPPED.get(result.stopped, result.stopped)}",
             f"- before: {describe(result.original)}",
             f"- after: {describe(result.best)}",
             f"- result reproduces: {ok}/{n} runs ({rate_source(result)})",
             f"- runs: {result.runs}, wall time {result.seconds / 60:.1f} min",
             f"- run it: `{command}`", "", "## Removed", ""]
    lines += [f"- {label}" for label in result.accepted] or ["- nothing"]
    if result.walk_back or result.undone:
        lines += ["", "## Undone", "",
                  "The first result did not reproduce in its confirmation runs "
                  f"({sum(result.fingerprint in o.fingerprints for o in result.confirmation)}"
                  f"/{len(result.confirmation)}): these kept steps were undone, the last "
                  "first, until an earlier best reproduced (else the original is kept).", ""]
        lines += [f"- {label}" for label in result.undone]
        lines += ["", "The walk back:", ""] + list(trial_lines(result.walk_back))
    lines += ["", "## Candidates", ""]
    lines += list(trial_lines(result.trials)) or ["- none tried"]
    return lines


def trial_lines(trials: list[Trial]) -> Iterator[str]:
    """One line per candidate tried: its label, outcome and its runs' verdicts."""
    for t in trials:
        verdicts = ", ".join(o.verdict or "?" for o in t.runs)
        yield f"- {t.label}: {t.outcome}" + (f" ({count(len(t.runs), 'run')}: {verdicts})"
                                            if t.runs else "")
