"""The chaos matrix: every scenario of a profile, one after another, on one environment.

Each scenario gets its own run directory and outputs; the matrix adds a combined
``verdict.json`` (the scenario x mode grid and every run's document), ``junit.xml`` (a
test case per scenario x mode) and ``report.html`` in the output folder, and the exit code
of the worst verdict (DESIGN §7). With ``--repeat N`` each scenario runs N times, each run
with its own seed (:func:`repeat_seeds`) and folder, and each cell holds N outcomes.
"""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path

from verifier.assess import exitcodes as X
from verifier.assess.facts import crashed_facts
from verifier.assess.finish import Ending, Judged, finish
from verifier.assess.outputs import write_matrix, write_outputs
from verifier.judge.model import KINDS
from verifier.judge.verdict import VERDICT_FORMAT, VERDICT_VERSION
from verifier.orchestration.orchestrator import RunOptions, ScenarioRun
from verifier.orchestration.scenario import Scenario
from verifier.orchestration.verify import spark_of
from verifier.report.faults import fault_summary
from verifier.report.files import write_verdict
from verifier.rundata.columns import mode_columns
from verifier.rundata.errors import UsageError
from verifier.rundata.layout import RunLayout


def crashed_doc(run: ScenarioRun, exc: BaseException) -> dict:
    """The built verdict document of a run that could not complete: every mode UNKNOWN
    (:func:`verifier.assess.finish.finish` finishes it)."""
    reason = f"{type(exc).__name__}: {exc}"
    # named as a completed run names them (verifier.rundata.columns), in the plans' order
    names = [(p, c.name, list(c.isolations)) for p in run.plans
             for c in mode_columns(p.mode, p.expect)]
    cols = [{"name": name, "mode": p.mode, "expect": p.expect, "isolations": isos,
             "pids": [p.pid], "topics": [p.topic], "verdict": "UNKNOWN", "forbidden": [],
             "reasons": [f"the run did not complete: {reason}"], "counts": {},
             "anomalies": {k: {"count": 0, "expectation": "inconclusive", "sample": [],
                               "timeline": []} for k in KINDS}} for p, name, isos in names]
    return {
        "format": VERDICT_FORMAT, "version": VERDICT_VERSION, "run": run.run_id,
        "scenario": run.scenario.name, "sink": run.sink,
        "kafka_version": getattr(getattr(run, "env", None), "kafka_version", None),
        "drain": {"completed": False, "behind": []}, "faults": [], "checks": {},
        "columns": cols, "unattributed": [],
        "error": "".join(traceback.format_exception(exc))[-4000:],
        "phases": run.clock.to_json(), "notes": run.notes,
    }  # fmt: skip


def run_selftest(doc: dict, run_dir: Path, seed: int, spark, out=sys.stdout) -> dict:
    """`verifier selftest` on a finished run (``chaos --selftest``): its table is written
    to RUN/selftest.json and returned for the reports. A run that could not complete has
    nothing to mutate: its section says so."""
    from verifier.judge.selftest import selftest
    from verifier.rundata.formats import write_json

    lay = RunLayout(run_dir)
    if "error" in doc or not doc.get("drain", {}).get("completed"):
        section = {"ok": False, "passed": 0, "rows": [], "skipped": [],
                   "error": "the run did not complete: nothing to mutate"}  # fmt: skip
        print(f"selftest {doc['scenario']}: {section['error']}", file=out, flush=True)
        return section

    def step(i: int, n: int, name: str) -> None:
        print(f"  selftest {doc['scenario']} {i + 1}/{n}: {name}", file=sys.stderr, flush=True)

    try:
        result = selftest(run_dir, seed=seed, keep=lay.selftest_kept, spark=spark,
                          progress=step)
    except Exception as exc:  # noqa: BLE001 - the self-test failing is a finding, not a crash
        section = {"ok": False, "passed": 0, "rows": [], "skipped": [],
                   "error": f"{type(exc).__name__}: {exc}"}  # fmt: skip
        print(f"selftest {doc['scenario']} could not run: {section['error']}", file=out)
        return section
    section = result.as_json()
    write_json(lay.selftest, "selftest", section, indent=True)
    print(result.render(), file=out, flush=True)
    return section


def run_one(env, scenario: Scenario, opts: RunOptions, spark, out=sys.stdout,
            advice=None) -> dict:
    """Run one scenario and finish its verdict (``advice``: each column's advice to compare
    with, ``verifier chaos``'s); its outputs in its run folder; returns the document."""
    from verifier.report import render_terminal
    from verifier.report.connections import render_connections

    run = ScenarioRun(env, scenario, opts, spark)
    which = ""
    if opts.repetition:
        which = f" (run {opts.repetition[0]}/{opts.repetition[1]}, seed {opts.seed})"
    print(f"\n=== scenario {scenario.name}{which}: "
          f"{scenario.description.split(chr(10))[0]}", file=out, flush=True)
    try:
        judged = run.execute()
    except KeyboardInterrupt as exc:  # SIGTERM, SIGINT, SIGHUP: record it, stop the matrix
        run.run_dir.mkdir(parents=True, exist_ok=True)
        reason = str(exc) or "interrupted"
        RunLayout(run.run_dir).interrupted.write_text(
            f"{reason} during {run.clock.broken_off or run.clock.current or 'setup'}\n")
        crashed = crashed_doc(run, RuntimeError(f"the run was interrupted ({reason})"))
        doc = finish(Judged(crashed, crashed_facts(run.run_dir, interrupted=reason)),
                     Ending(connections=False, meta={"run_dir": str(run.run_dir)}))
        write_verdict(doc, RunLayout(run.run_dir).verdict)
        print(f"scenario {scenario.name} interrupted ({reason}); run folder {run.run_dir}",
              file=out, flush=True)
        raise
    except UsageError:  # bad input (a pipeline that drops the value): every scenario
        raise  # would refuse it the same way; the CLI says why and exits 64
    except Exception as exc:  # noqa: BLE001 - one scenario fails, not the whole matrix
        print(f"scenario {scenario.name} could not complete: {exc}", file=out)
        judged = Judged(crashed_doc(run, exc), crashed_facts(run.run_dir))
    run.run_dir.mkdir(parents=True, exist_ok=True)
    meta: dict = {}
    if opts.repetition:  # chaos --repeat: which run of its scenario, with which seed
        meta["repetition"] = {"index": opts.repetition[0], "of": opts.repetition[1],
                              "seed": opts.seed}
    if run.stopped_early:  # --fail-fast: the load was cut short at this live anomaly
        meta["stopped_early"] = run.stopped_early
    meta.update(run_dir=str(run.run_dir), fault_summary=fault_summary(run.run_dir),
                phases=run.clock.to_json(), notes=list(run.notes))
    ending = Ending(skipped_faults=tuple(run.skipped_faults), advice=advice, meta=meta)
    doc = finish(judged, ending)
    with run.clock.phase("report"):
        write_outputs(doc, run.run_dir)
        # the live path's verdict is on screen since the drain: again only if the batch
        # cross-check changed it
        if (doc.get("batch") or {}).get("agree") is not True:
            try:
                print(render_terminal(doc), file=out)
            except (KeyError, TypeError) as exc:  # a crashed doc lacks some fields
                print(f"(no table: {exc})", file=out)
        print(render_connections(doc.get("connections")), file=out)
    section = None
    if opts.selftest:  # after the verdict is on screen; the reports are written again
        with run.clock.phase("selftest"):
            section = run_selftest(doc, run.run_dir, opts.seed, spark_of(spark), out)
    # the run's verdict.json is the very document the matrix holds (phases included)
    doc = finish(judged, replace(ending, selftest=section,
                                 meta={**meta, "phases": run.clock.to_json()}))
    if opts.selftest:
        write_outputs(doc, run.run_dir)
    else:
        write_verdict(doc, RunLayout(run.run_dir).verdict)
    for line in doc["fault_summary"]:
        print(f"fault: {line}", file=out)
    print(live_vs_batch_line(doc.get("live_vs_batch"), doc.get("batch")), file=out)
    print(f"run folder {run.run_dir}  |  {run.clock.summary()}", file=out, flush=True)
    if doc.get("exit_code") == 1 and not doc.get("interrupted"):  # docs/shrink.md
        print(f"shrink this FAIL to its smallest schedule: verifier shrink {run.run_dir}",
              file=out, flush=True)
    for note in run.notes:
        print(f"note: {note}", file=out)
    return doc


def live_vs_batch_line(section: dict | None, batch: dict | None = None) -> str:
    """One line: did the batch cross-check agree with the live checks on this run: their
    anomalies and, when the verdict came from the live path (``batch``), the verdicts?"""
    if not section:
        return "live checks: not compared (the run did not complete)"
    if not section.get("compared"):
        return f"live checks: not compared ({section.get('reason') or section.get('error')})"
    who = "batch cross-check" if batch is None else f"batch cross-check ({batch['seconds']:.0f} s)"
    verdicts = ""
    if batch is not None and batch.get("differ"):
        verdicts = "; verdicts DIFFER, UNKNOWN there: " + "; ".join(
            f"{x['column']} live {x['live']} batch {x['batch']}" for x in batch["differ"][:3])
    elif batch is not None:
        verdicts = ", the same verdicts"
    if section["agree"]:
        said = "agrees" if not verdicts.startswith(";") else "agrees on the anomalies"
        return (f"{who} {said}: {section['live']} anomalies, the same as the live checks"
                f"{verdicts} ({section['seconds']:.1f} s to compare)")
    rows = "; ".join(f"{x['side']} {x['kind']} {x['topic']}-{x['partition']}@{x['offset']}"
                     for x in section["differ"][:3])
    return (f"{who}: the live checks DISAGREE with the batch checks on {section['n_differ']} "
            f"anomalies (UNKNOWN for {', '.join(section['modes'])}): {rows}"
            f"{verdicts if verdicts.startswith(';') else ''}")


def repeat_seeds(seed: int, repeat: int) -> list[int]:
    """The seeds of ``--repeat N`` runs of a scenario: ``seed, seed+1, ..., seed+N-1``.
    Run 1 is the run ``--seed S`` alone makes, and ``--seed S+k-1`` alone runs run k's
    fault schedule again (a run to shrink or analyse on its own)."""
    return [seed + k for k in range(repeat)]


def planned_runs(scenarios: list[Scenario], opts: RunOptions) -> list[tuple[Scenario, RunOptions]]:
    """Every run of the matrix in order: each scenario ``opts.repeat`` times in a row, each
    run with its seed and its place (``repetition``); one run keeps ``opts`` as given."""
    if opts.repeat == 1:
        return [(s, opts) for s in scenarios]
    return [(s, replace(opts, seed=seed, repetition=(k, opts.repeat)))
            for s in scenarios
            for k, seed in enumerate(repeat_seeds(opts.seed, opts.repeat), 1)]


def _label(scenario: Scenario, opts: RunOptions) -> str:
    return scenario.name + (f" #{opts.repetition[0]}" if opts.repetition else "")


def run_matrix(env, scenarios: list[Scenario], opts: RunOptions, spark,
               out=sys.stdout, collect: list | None = None, advice=None) -> int:
    """Run every scenario (``opts.repeat`` times each); write the combined outputs; return
    the exit code. The runs' documents are appended to ``collect`` when given, each as its
    run ends (an interrupted known-bugs profile judges the runs it finished); ``advice``:
    each column's advice, compared in every run's document (:func:`run_one`)."""
    from verifier.report import render_grid
    from verifier.report.compare import render_summary, summary

    t0 = time.monotonic()
    docs = []
    runs = planned_runs(scenarios, opts)
    with env:
        for i, (scenario, run_opts) in enumerate(runs):
            docs.append(run_one(env, scenario, run_opts, spark, out, advice=advice))
            if collect is not None:
                collect.append(docs[-1])
            if opts.fail_fast and docs[-1].get("exit_code") == 1 and i < len(runs) - 1:
                left = [_label(s, o) for s, o in runs[i + 1:]]
                print(f"--fail-fast: {_label(scenario, run_opts)} failed; not run: "
                      f"{', '.join(left)}", file=out, flush=True)
                break
    meta = {"profile": opts.profile, "seed": opts.seed, "environment": env.name,
            "kafka_version": getattr(env, "kafka_version", None)}
    if opts.repeat > 1:
        meta.update(repeat=opts.repeat, seeds=repeat_seeds(opts.seed, opts.repeat))
    grid = write_matrix(docs, Path(opts.out), meta)
    print("\n=== verdicts: scenario x mode", file=out)
    print(render_grid(grid, docs), file=out)
    print("\n=== delivered guarantees, per mode across the scenarios", file=out)
    print(render_summary(summary(docs)), file=out)
    if any(d.get("selftest") for d in docs):
        from verifier.report.selftest import headline

        print("\n=== self-test: each anomaly injected into a copy of each run", file=out)
        for d in docs:
            if d.get("selftest"):
                print(f"{d['scenario']:<20} {headline(d['selftest'])}", file=out)
    walls = ", ".join(f"{d['scenario']}{_rep(d)} {d['phases']['total_s']:.0f}s" for d in docs)
    print(f"\nwall time {time.monotonic() - t0:.0f}s ({walls})", file=out)
    print(f"outputs: {opts.out}/verdict.json, junit.xml, report.html", file=out, flush=True)
    code, why = X.of_matrix(grid, docs)
    if why == "connections":
        print("a connection check the scenario makes forbidden failed (exit 1)", file=out)
    elif why == "selftest":  # the verdicts were not shown to hold on this run
        failed = [d["scenario"] for d in docs if "selftest" in d and not d["selftest"]["ok"]]
        print(f"the self-test did not hold on {', '.join(failed)}: these verdicts are not "
              f"proven (exit 2; see each run's selftest.json)", file=out)
    return code


def _rep(doc: dict) -> str:
    return f" #{doc['repetition']['index']}" if doc.get("repetition") else ""


def run_versions(make_env, versions: list[str], scenarios: list[Scenario], opts: RunOptions,
                 spark, out=sys.stdout, collect: list | None = None, advice=None) -> int:
    """The ``versions`` profile: the scenarios on a fresh local cluster of each Kafka
    version in turn (outputs in ``OUT/kafka-<version>/``), then one grid, version x client
    x mode, printed and written to ``OUT/versions.json``. Returns the worst exit code.
    A version may name feature levels (``4.4.0+transaction.version=0``), set with Kafka's
    feature tool after the start; every 4.x cluster's levels are read back, for the line
    that says which clients ran transaction version 2.
    ``collect`` and ``advice``: as :func:`run_matrix`'s, for every version's runs."""
    from verifier.harness.features import TRANSACTION_VERSION, FeatureLevels, split_cluster
    from verifier.report.versions import (
        render_version_grid,
        transaction_version_line,
        version_grid,
        write_version_grid,
    )

    t0 = time.monotonic()
    entries: list[tuple[str, list[dict]]] = []
    tv: dict[str, int] = {}  # each cluster's transaction.version, as read after its start
    for version in versions:
        print(f"\n##### Kafka {version}: {', '.join(s.name for s in scenarios)}", file=out,
              flush=True)
        docs: list[dict] = []
        t1 = time.monotonic()
        kafka, levels = split_cluster(version)
        env, read = make_env(kafka), {}
        if int(kafka.split(".")[0]) >= 4:  # 3.x brokers have no feature levels (level 0)
            env = FeatureLevels(env, levels, out, record=read)
        try:
            run_matrix(env, scenarios, replace(opts, out=Path(opts.out) / f"kafka-{version}"),
                       spark, out, collect=docs, advice=advice)
        except Exception as exc:  # noqa: BLE001 - one version's cluster failing is a row
            print(f"Kafka {version} could not run: {type(exc).__name__}: {exc}", file=out)
        tv[version] = read.get(TRANSACTION_VERSION, 0)
        entries.append((version, docs))
        if collect is not None:
            collect.extend(docs)
        print(f"Kafka {version}: {time.monotonic() - t1:.0f}s", file=out, flush=True)
    grid = version_grid(entries)
    grid["transaction_version"] = tv
    missing = [v for v, docs in entries if not docs]
    # a version whose cluster never ran: no row, and the run is incomplete
    X.set_versions(grid, [d.get("exit_code", 2) for _, docs in entries for d in docs],
                   not_run=bool(missing))
    if missing:
        grid["not_run"] = missing
    write_version_grid(grid, Path(opts.out) / "versions.json",
                       {"profile": opts.profile, "seed": opts.seed, "kafka_versions": versions,
                        "scenarios": [s.name for s in scenarios]})
    print("\n=== verdicts: Kafka version x client x mode", file=out)
    print(render_version_grid(grid), file=out)
    print(transaction_version_line(grid), file=out)
    for v in missing:
        print(f"Kafka {v}: no verdict (the run could not start; see above)", file=out)
    print(f"\nwall time {time.monotonic() - t0:.0f}s; outputs: {opts.out}/versions.json and "
          f"{opts.out}/kafka-<version>/", file=out, flush=True)
    return grid["exit_code"]
