"""The batch pass: every check on Spark over a finished run, and `verifier analyze`.

Offline it needs the run folder and Spark (local, or a cluster via ``--spark-master``),
never Kafka. The pass builds the run's document from the checks' outcomes and holds the
live result against them (:func:`cross_check`: during a run the follower's, offline the
same follower polled once); :func:`analyze` finishes that document
(:func:`verifier.assess.finish.finish`). In a chaos run the verdict is the live path's
and this pass its cross-check.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import replace
from pathlib import Path

from verifier.assess.facts import RunFacts, read_facts
from verifier.assess.finish import CrossCheck, Judged, finish
from verifier.judge import verdict as V
from verifier.judge.checks import Derived, load_run, run_checks
from verifier.judge.checks.crosscheck import compare
from verifier.judge.checks.load import RunFiles
from verifier.judge.checks.runner import DEFAULT_SAMPLE
from verifier.judge.checks.stats import counts_by_pid, partition_points, throughput
from verifier.judge.model import RunData

log = logging.getLogger(__name__)

MAX_PLOTS = 4  # anomalous partitions plotted in report.html


def analyze(spark, run_dir: Path | str, cap: int = DEFAULT_SAMPLE,
            facts: RunFacts | None = None, files: RunFiles | None = None) -> dict:
    """The finished verdict.json document of the batch pass over a run (writes nothing),
    its anomalies compared with the live result read from the run folder. ``facts`` and
    ``files``: the run as already read (``verifier analyze`` reads it before Spark)."""
    facts = facts or read_facts(run_dir)
    doc, cross = batch_pass(spark, facts, cap, files)
    return finish(Judged(doc, facts, cross))


def batch_pass(spark, facts: RunFacts, cap: int = DEFAULT_SAMPLE,
               files: RunFiles | None = None, live: dict | None = None
               ) -> tuple[dict, CrossCheck]:
    """The run's document as the batch checks build it (not finished) and its
    cross-check against ``live`` (the run's live result, when the run has it; else it is
    read from the run folder)."""
    run = load_run(spark, facts.run_dir, files or facts.run_files())
    d = Derived(run)
    try:
        outcomes = run_checks(run, d, cap=cap)
        counts = counts_by_pid(d)
        piped, piped_counts = facts.pipelines(cap)
        outcomes, counts = outcomes + piped, {**counts, **piped_counts}
        by_pid = throughput(d)
        modes = {p: s.mode for p, s in run.config.producers.items()}
        thr: dict[str, dict[int, int]] = {}
        for pid, series in by_pid.items():
            acc = thr.setdefault(modes[pid], {})
            for b, n in series:
                acc[b] = acc.get(b, 0) + n
        extras = {
            "timeline": {
                "bucket_ms": 1000,
                "throughput": {m: sorted(s.items()) for m, s in thr.items()},
            }
        }
        doc = V.build(run, outcomes, counts, extras, cap=cap)
        doc["clients"] = facts.clients
        doc["kafka_version"] = facts.kafka_version
        doc["partition_plots"] = _plots(d, doc)
        cross = cross_check(run, d, doc, facts.run_dir, cap, live)
    finally:
        d.release()
    return doc, cross


def check_live(spark, judged: Judged, live: dict, cap: int = DEFAULT_SAMPLE) -> Judged:
    """The live path's ``judged`` document with the batch pass over the same data as its
    cross-check (``live``: the live path's result); a batch pass that crashed leaves the
    verdict standing, unconfirmed: every column it concerns is UNKNOWN when finished."""
    start = time.monotonic()
    try:
        batch, cross = batch_pass(spark, judged.facts, cap, live=live)
    except Exception as exc:  # noqa: BLE001 - the verdict stands, unconfirmed: UNKNOWN
        log.warning("batch cross-check", exc_info=True)
        batch, cross = {}, CrossCheck({
            "compared": False, "agree": False, "n_differ": 0, "differ": [],
            "modes": sorted({c["mode"] for c in judged.doc["columns"]}),
            "error": f"the batch cross-check crashed: {type(exc).__name__}: {exc}"})
    return replace(judged, cross=replace(cross, batch=batch,
                                         seconds=time.monotonic() - start))


def follow_offline(run_dir: Path | str, run: RunData) -> dict | None:
    """The live result of a finished run, read in one go (``verifier analyze``): the same
    follower as during a run, polled once, on the same definitions."""
    from verifier.assess.follow import RunFollower

    return RunFollower(run_dir, run.config).result(run.drain)


def cross_check(run: RunData, d: Derived, doc: dict, run_dir: Path | str, cap: int,
                live: dict | None = None) -> CrossCheck:
    """``live_vs_batch``: the live result (``live``, else read from the run folder)
    against the batch checks' anomalies; a crashed comparison says why."""
    start = time.perf_counter()
    summary = None
    try:
        got = live if live is not None else follow_offline(run_dir, run)
        if got is None:
            return CrossCheck({"compared": False, "agree": True,
                               "reason": "the observer ran without live checks"})
        summary = {iso: st.summary() for iso, st in got["states"].items()}
        section = compare(run, d, got["table"], cap, full=True)
    except Exception as exc:  # noqa: BLE001 - a crashed comparison leaves the verdict open
        section = {"compared": False, "agree": False, "n_differ": 0, "differ": [],
                   "modes": sorted({c["mode"] for c in doc["columns"]}),
                   "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-4000:]}  # fmt: skip
    section["seconds"] = round(time.perf_counter() - start, 3)
    return CrossCheck(section, live=summary)


def _plots(d: Derived, doc: dict) -> list[dict]:
    """Offsets around the sampled anomalies of the first few anomalous partitions."""
    where: dict[tuple[str, int], list[int]] = {}
    for col in doc["columns"]:
        for a in col["anomalies"].values():
            for s in a["sample"]:
                offs = [o for o in (s.get("offsets") or [s.get("offset")]) if o is not None]
                if s.get("topic") is not None and s.get("partition") is not None and offs:
                    where.setdefault((s["topic"], s["partition"]), []).extend(offs)
    plots = []
    for (topic, part), offs in sorted(where.items())[:MAX_PLOTS]:
        plots.append({"topic": topic, "partition": part, "anomalous_offsets": sorted(set(offs)),
                      "points": partition_points(d, topic, part, offs)})  # fmt: skip
    return plots
