"""One call of `verifier explore` on an environment already checked (docs/explore.md):
the planned trials not tried yet, each generated as a scenario and run as `verifier
chaos` runs one (:func:`verifier.orchestration.chaos.run_one`), within the budget; each
new FAIL shrunk with `verifier shrink`'s search on the same cluster and written as a
scenario file named by its fingerprint; the ledger saved after every step, so a second
call continues; the report and the coverage table at the end."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from verifier.orchestration.chaos import run_one
from verifier.orchestration.explore.fingerprint import (
    cells_of,
    fail_fingerprints,
    known_text,
    recognize,
    signatures,
)
from verifier.orchestration.explore.ledger import Ledger, trial_record
from verifier.orchestration.explore.report import write_report
from verifier.orchestration.explore.space import Perturbation, key_of
from verifier.orchestration.explore.trials import app_run, scenario_spec
from verifier.orchestration.planning import RunOptions
from verifier.orchestration.scenario import parse_scenario
from verifier.orchestration.shrink_plan import scenario_toml

#: a shrink needs at least this many runs' time left, else it waits for the next call
SHRINK_MIN_RUNS = 3


@dataclass(frozen=True)
class ExploreJob:
    """A checked `verifier explore`: where, on what, within which budget, what to try."""

    out: Path
    kafka_version: str
    client: str
    budget_s: float
    trials: tuple[tuple[Perturbation, ...], ...]
    settings: dict[str, str] = field(default_factory=dict)
    shrink_budget_s: float = 600.0
    #: the focus (``--requests``): the request types the trials are limited to, or None
    requests: tuple[str, ...] | None = None
    #: stop at the first finding, unshrunk (``--first``: the next call shrinks it)
    first: bool = False
    #: the `verifier chaos` command that runs a scenario file as explore ran it, with
    #: the application a trial of the app workload runs beside it (preset, instances)
    command: Callable[..., str] = lambda path, app=None: (
        f"verifier chaos --scenario {path}"
        + (f" --app {app[0]} --app-instances {app[1]}" if app else ""))

    def spec(self, trial: tuple[Perturbation, ...]) -> dict:
        spec = scenario_spec(trial, self.kafka_version, self.client)
        if self.settings:
            spec["broker"] = {"apply": "start", "at": 0.0, "settings": dict(self.settings)}
        return spec

    def scenario_file(self, trial: tuple[Perturbation, ...]) -> Path:
        """The trial as a scenario file in OUT/scenarios/ (written, and returned)."""
        path = self.out / "scenarios" / f"{key_of(trial)}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(scenario_toml(self.spec(trial), [
            f"verifier explore: {'; '.join(str(p) for p in trial)}",
            f"Kafka {self.kafka_version}, client {self.client}"]))
        return path

    def apps_for(self, trial: tuple[Perturbation, ...]) -> tuple:
        """The consumer application a trial of the app workload runs (``--app``, as
        verifier.rundata.apps plans it: its Java preset on the jars of the client's
        release), or () for the other trials."""
        run = app_run(trial, self.client)
        if run is None:
            return ()
        import sys

        from verifier.rundata import jvm
        from verifier.rundata.apps import plan_apps

        preset, version, instances = run
        return tuple(plan_apps(preset, None, instances, python=sys.executable,
                               java=jvm.java_executable(),
                               classpath=jvm.java_apps_jars(version or None).classpath()))

    def build_apps(self) -> None:
        """Build the Java application the app workload's trials run, if one does and it
        is not built yet (Maven, once), before the first trial."""
        from verifier.rundata import jvm

        for trial in self.trials:
            run = app_run(trial, self.client)
            if run is not None and any(a.runtime == "java" for a in self.apps_for(trial)):
                jarset = jvm.java_apps_jars(run[1] or None)
                if not jvm.project_built(jvm.APPS_PROJECT, jarset):
                    jvm.build_project(jvm.APPS_PROJECT, jarset)
                return

    def command_for(self, trial: tuple[Perturbation, ...]) -> Callable[[Path], str]:
        """:attr:`command` for ``trial``'s scenario files: with its application, if any."""
        run = app_run(trial, self.client)
        app = None if run is None else (run[0], run[2])
        return lambda path: self.command(path, app) if app else self.command(path)

    @property
    def setting_list(self) -> list[str]:
        return [f"{k}={v}" for k, v in sorted(self.settings.items())]

    @property
    def request_list(self) -> list[str] | None:
        return None if self.requests is None else list(self.requests)


def explore(job: ExploreJob, env, opts: RunOptions, spark, say=print,
            clock: Callable[[], float] = time.monotonic) -> int:
    """Run the job's untried trials on ``env`` within its budget; returns the exit code:
    1 a FAIL was found (in this call or an earlier one of the folder), 2 no trial could
    be verified, 3 none exposed its perturbation, else 0."""
    from producers.clients import same_client
    from verifier.orchestration.known_bugs import load_known_bugs
    from verifier.orchestration.scenario import load_scenario

    job.out.mkdir(parents=True, exist_ok=True)
    ledger = Ledger.open(job.out, job.kafka_version, job.client, job.setting_list,
                         job.request_list)
    sigs = signatures(load_known_bugs(), load_scenario)
    t0 = clock()
    session = {"started": datetime.now(UTC).isoformat(timespec="seconds"),
               "budget_s": job.budget_s, "tried": 0, "seconds": 0.0}
    before_s = sum(float(s.get("seconds") or 0) for s in ledger.sessions)
    ledger.sessions.append(session)
    todo = [t for t in job.trials if not ledger.tried(key_of(t))]
    say(f"explore Kafka {job.kafka_version}, client {job.client}"
        f"{', ' + ', '.join(job.setting_list) if job.setting_list else ''}"
        f"{', requests ' + ','.join(job.requests) if job.requests else ''}: "
        f"{len(job.trials)} trials planned, {len(job.trials) - len(todo)} tried before, "
        f"budget {job.budget_s / 60:.0f} min | output {job.out}")

    def left() -> float:
        return job.budget_s - (clock() - t0)

    def recognized(fp) -> list[dict]:
        return recognize(fp, sigs, job.kafka_version, job.client, same=same_client)

    with (job.out / "runs.log").open("a") as log, env:
        for name in [n for n, f in ledger.findings.items()
                     if f.get("shrink") is None and not job.first]:
            if left() < SHRINK_MIN_RUNS * ledger.run_seconds():
                break
            _shrink(job, ledger, name, env, opts, spark, log, left(), recognized, say)
        for i, trial in enumerate(todo):
            if left() < ledger.run_seconds():
                say(f"budget: {left() / 60:.1f} min left, a run takes "
                    f"{ledger.run_seconds() / 60:.1f}: {len(todo) - i} trials left untried")
                break
            key = key_of(trial)
            path = job.scenario_file(trial)
            scenario = parse_scenario(path.read_text(), f"explore-{key}", str(path))
            say(f"[{len(ledger.trials) + 1}/{len(job.trials)}] {key}: "
                f"{'; '.join(str(p) for p in trial)} ({left() / 60:.1f} min left)")
            t1 = clock()
            doc = run_one(env, scenario,
                          replace(opts, out=job.out / "runs", apps=job.apps_for(trial)),
                          spark, out=log)
            record = trial_record([p.key for p in trial], doc, clock() - t1)
            ledger.trials[key] = record
            session["tried"] += 1
            session["seconds"] = round(clock() - t0, 1)
            fails = fail_fingerprints(doc, scenario.faults)
            say(f"    {record['outcome']}{' (exposed)' if record['exposed'] else ''} in "
                f"{record['seconds']:.0f} s"
                + "".join(f"; FAIL {c} {fp.anomaly}" for c, fp in fails))
            new = _merge(ledger, key, record, fails, recognized)
            for name in new:  # the exploration's wall time to it, earlier calls included
                ledger.findings[name]["found_after_s"] = round(
                    before_s + clock() - t0, 1)
            ledger.save()
            for name in new:
                say(f"    finding {name}: {known_text(ledger.findings[name]['known'])}")
            if new and job.first:
                say(f"--first: stopped at the first finding ({len(todo) - i - 1} trials "
                    "left untried; the next call on the folder shrinks it)")
                break
            if new and left() >= SHRINK_MIN_RUNS * ledger.run_seconds():
                _shrink(job, ledger, new[0], env, opts, spark, log, left(), recognized, say)
    session["seconds"] = round(clock() - t0, 1)
    session["exit_code"] = code = _exit_code(ledger)  # what this call exits with
    ledger.save()
    for line in write_report(ledger, [key_of(t) for t in job.trials], job):
        say(line)
    return code


def _merge(ledger: Ledger, key: str, record: dict, fails, recognized) -> list[str]:
    """Add a FAILed trial's fingerprints to the findings; returns the names new in this
    trial. Duplicates are merged: a fingerprint whose column kind and anomaly kind an
    existing finding has, with all of that finding's cells among its own (the same cells,
    or a pair holding a single that FAILed so alone), adds its run to that finding and
    is not shrunk again."""
    new = []
    for column, fp in fails:
        cells = {c.key for c in fp.cells}
        same = next((n for n, e in ledger.findings.items()
                     if (e["column_kind"], e["anomaly"]) == (fp.column_kind, fp.anomaly)
                     and set(e["cells"]) <= cells), None)
        if same is not None:
            entry = ledger.findings[same]
            if record["run_dir"] not in entry["runs"]:
                entry["runs"].append(record["run_dir"])
                entry["trials"].append(key)
            continue
        ledger.findings[fp.name] = {
            "column": column, "column_kind": fp.column_kind, "anomaly": fp.anomaly,
            "cells": [c.key for c in fp.cells], "own": fp.own, "text": str(fp),
            "known": recognized(fp), "runs": [record["run_dir"]], "trials": [key],
            "scenario": None, "shrink": None}
        new.append(fp.name)
    for name in new[1:]:  # one shrink per run: the others share its scenario
        ledger.findings[name]["shrunk_with"] = new[0]
    return new


def _shrink(job: ExploreJob, ledger: Ledger, name: str, env, opts, spark, log,
            left_s: float, recognized, say) -> None:
    """Shrink one finding with `verifier shrink`'s search (one calibration run, one
    confirmation: the exploration's budget is the limit) on the running cluster; its
    scenario file OUT/findings/<fingerprint>.toml, the shrink's outputs beside it."""
    from verifier.orchestration.explore.shrinking import shrink_finding

    entry = ledger.findings[name]
    if entry.get("shrunk_with"):
        return
    budget = min(job.shrink_budget_s, left_s)
    say(f"    shrink {name} ({budget / 60:.1f} min)")
    out = job.out / "findings" / name
    # its trial's application runs beside every candidate (the app workload's)
    trial = next((t for t in job.trials if key_of(t) == entry["trials"][0]), ())
    result, paths = shrink_finding(Path(entry["runs"][0]), entry["column"],
                                   entry["anomaly"], out, budget, env,
                                   replace(opts, apps=job.apps_for(trial)), spark, log,
                                   job.command_for(trial), say)
    shrunk_cells = cells_of(result.best.get("faults"))
    target = job.out / "findings" / f"{name}.toml"
    shutil.copyfile(paths["scenario"], target)
    hits, n = result.confirmed_rate()
    entry.update(scenario=str(target), shrink={
        "stopped": result.stopped, "runs": result.runs, "seconds": round(result.seconds, 1),
        "removed": list(result.accepted), "undone": list(result.undone),
        "confirmed": [hits, n],
        "cells": [c.key for c in shrunk_cells], "report": str(paths["report"])})
    for other in ledger.findings.values():
        if other.get("shrunk_with") == name:
            other["scenario"] = str(target)
    ledger.save()
    removed = "; ".join(result.accepted) or "nothing removed"
    undone = (f"; undone after its confirmation did not reproduce: "
              f"{'; '.join(result.undone)}" if result.undone else "")
    say(f"    shrunk: {result.stopped}, {result.runs} runs; {removed}{undone}; reproduces "
        f"{hits}/{n}; scenario {target}")


def _exit_code(ledger: Ledger) -> int:
    if ledger.findings:
        return 1
    outcomes = [t.get("outcome") for t in ledger.trials.values()]
    if not outcomes or all(o == "UNKNOWN" for o in outcomes):
        return 2
    if not any(t.get("exposed") for t in ledger.trials.values()):
        return 3
    return 0
