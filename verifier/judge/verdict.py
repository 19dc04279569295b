"""Verdicts: check outcomes + the expectation table -> PASS / FAIL / UNKNOWN per column.

A column is one mode read at the isolation levels its expectations distinguish: one
column for a non-transactional mode (both levels read the same), two for a
transactional one. The result is the ``verdict.json`` document (schema in
docs/expectations.md), a plain dict so ``verifier report`` can re-render it.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.judge import expectations as X
from verifier.judge.faults import unknown_outcomes
from verifier.judge.faults.windows import fault_kinds, fault_windows
from verifier.judge.model import (
    HANGING,
    KINDS,
    OBSERVER,
    CheckOutcome,
    RunData,
)  # fmt: skip
from verifier.rundata.columns import APP_PREFIX, run_columns
from verifier.rundata.formats import FORMATS
from verifier.rundata.vocab import (  # the verdicts: one table, there
    FAIL,
    NOT_EXERCISED,
    PASS,
    SKIPPED,  # noqa: F401 - the verdicts the judge's users take from here
    UNKNOWN,
    VERDICT_ORDER,
)

VERDICT_FORMAT = "verdict"
VERDICT_VERSION = FORMATS[VERDICT_FORMAT]

#: what a part a reader has not read to its end can hide: the records still missing there
#: (unseen: lost or late), that reader's own deliveries of them (duplicate deliveries,
#: disagreement with the other readers) and, until read, whatever the log holds there.
#: Only hanging transactions are decided on drain.json's end offsets alone. A column is
#: UNKNOWN for an incomplete part only if one of these is forbidden (or inconclusive)
#: for it; a forbidden anomaly found elsewhere FAILs it regardless.
HIDDEN_BY_INCOMPLETE = tuple(k for k in KINDS if k != HANGING)
#: a pipeline's check is named after its column (``pipeline:<name>``)
PIPELINE_CHECK = "pipeline:"


@dataclass(frozen=True)
class Column:
    name: str
    mode: str  # label in config.json (a preset or a user's)
    expect: str  # preset whose expectations apply
    isolations: tuple[str, ...]


def columns_of(run: RunData) -> list[Column]:
    """Report columns (verifier.rundata.columns): a transactional expectation gets one
    column per isolation level; the pipelines under test after the producer modes."""
    return [Column(c.name, c.mode, c.expect, c.isolations)
            for c in run_columns(run.config.producers.values(),
                                 run.config.pipelines.values(), run.config.apps.values())]


def _entry(col: Column, kind: str, sink: str, faults: set[str]) -> str:
    entries = [X.expectation(col.expect, iso, kind, sink) for iso in col.isolations]
    entry = X.strictest(entries)
    cond = next((X.CONDITIONS.get((col.expect, i, kind)) for i in col.isolations), None)
    if entry == X.EXPECTED and cond and cond not in faults:
        # expected only under its condition; else tolerated, or what OTHERWISE says
        return next((X.OTHERWISE[(col.expect, i, kind)] for i in col.isolations
                     if (col.expect, i, kind) in X.OTHERWISE), X.TOLERATED)
    return entry


def _anomalies(col: Column, outcomes: list[CheckOutcome], sink: str, faults: set[str],
               cap: int) -> dict[str, dict]:  # fmt: skip
    out = {k: {"count": 0, "expectation": _entry(col, k, sink, faults), "sample": [],
               "timeline": {}} for k in KINDS}  # fmt: skip
    for o in outcomes:
        for g in o.groups:
            if g.mode != col.mode or (
                g.isolation is not None and g.isolation not in col.isolations
            ):
                continue
            a = out[g.kind]
            a["count"] += g.count
            a["sample"] = (a["sample"] + g.sample)[:cap]
            for b, n in g.timeline:
                a["timeline"][b] = a["timeline"].get(b, 0) + n
    for a in out.values():
        a["timeline"] = sorted(a["timeline"].items())
    return out


def _reasons_unknown(col: Column, run: RunData, outcomes, anomalies, topics) -> list[str]:
    reasons = []
    for o in outcomes:
        # a pipeline's or an application's check judges its own column only
        mine = not o.name.startswith((PIPELINE_CHECK, APP_PREFIX)) or \
            o.name in (col.mode, col.name)
        if o.error and mine and any(anomalies[k]["expectation"] in (X.FORBIDDEN,
                                                                  X.INCONCLUSIVE)
                                    for k in o.kinds):  # fmt: skip
            # a pipeline's check judges its own column only (verifier.judge.pipeline)
            reasons.append(f"check {o.name} crashed: {o.summary}")
        if o.stopped and o.name == col.mode:  # a pipeline's query ended with an error
            reasons.append(f"the query stopped with an error: {o.stopped}")
        if o.unjudged and o.name in (col.mode, col.name):  # e.g. no identities
            reasons.append(o.unjudged)
    readers = {r for r, i in run.combos if i in col.isolations} or {OBSERVER}
    parts = run.drain.incomplete_where(topics, col.isolations, readers)
    hiding = [k for k in HIDDEN_BY_INCOMPLETE
              if anomalies[k]["expectation"] in (X.FORBIDDEN, X.INCONCLUSIVE)]  # fmt: skip
    if parts and hiding:
        more = f" and {len(parts) - 5} more" if len(parts) > 5 else ""
        reasons.append(f"drain incomplete for {'; '.join(parts[:5])}{more}: records not "
                       f"read there may be lost or late, or hide {', '.join(hiding)}")
    for pid, spec in run.config.producers.items():
        if spec.mode != col.mode:
            continue
        if pid in run.start_failures:  # its generator gave up before producing
            reasons.append(f"producer {pid} never started: {run.start_failures[pid]}")
        elif not run.started.get(pid, False):
            reasons.append(f"producer {pid} never started")
    stopped = any(o.stopped and o.name == col.mode for o in outcomes)
    for k, a in anomalies.items():
        if a["count"] and a["expectation"] == X.INCONCLUSIVE:
            reasons.append(f"{a['count']} {k}: never read, the query stopped" if stopped
                           else f"{a['count']} {k}: lost or late, the drain did not finish")
    reasons += unknown_outcomes(run.nemesis, run.config, col.mode)
    return reasons


def column_verdict(col, run, outcomes, counts, faults, cap) -> dict:
    """One column of verdict.json: counts, anomalies with their expectation, verdict."""
    anomalies = _anomalies(col, outcomes, run.config.sink, faults, cap)
    forbidden = [k for k, a in anomalies.items() if a["count"] and a["expectation"] == X.FORBIDDEN]
    pids = sorted(p for p, s in run.config.producers.items() if s.mode == col.mode)
    topics = run.config.topics_of(col.mode)
    unknown = _reasons_unknown(col, run, outcomes, anomalies, topics)
    verdict = FAIL if forbidden else UNKNOWN if unknown else PASS
    total = {k: 0 for k in ("sent", "acknowledged", "indeterminate", "failed", "committed")}
    observed = 0
    for pid in pids or [col.mode]:  # a pipeline's counts are under its column's mode
        c = counts.get(pid, {})
        for k in total:
            total[k] += c.get(k, 0)
        observed += c.get(
            "observed" if len(col.isolations) > 1 else f"observed_{col.isolations[0]}", 0
        )
    detail = next((o.detail for o in outcomes if o.detail and o.name in (col.mode, col.name)),
                  None)
    return {
        "name": col.name, "mode": col.mode, "expect": col.expect,
        "isolations": list(col.isolations), "pids": pids, "topics": sorted(topics),
        "verdict": verdict, "forbidden": forbidden, "reasons": unknown,
        "counts": {**total, "observed": observed}, "anomalies": anomalies,
        **({"oracle": detail} if detail else {}),
    }  # fmt: skip


def apply_exposure(doc: dict, exposure: dict[str, dict]) -> None:
    """Each column's ``exposure`` (verifier.judge.exposure) into ``doc``; a column that
    would PASS though a fault concerning it was not applied, acted on none of its
    operations, or met its load stalled, is NOT EXERCISED with the reasons. One whose
    exposure was not measured (the run did not record what a fault acted on) is UNKNOWN
    with the reason: "not measured" is never PASS. A FAIL stays (the forbidden anomaly
    was seen), an UNKNOWN stays (it says more: the run could not establish the verdict).
    A stall the fault itself caused is no reason for either: a client that made no
    progress long after its coordinator or leader died is a liveness finding
    (``liveness``: verifier.judge.liveness), shown beside any verdict, which leaves the
    verdict and the exit code as they are (the delivery promise was tested)."""
    for c in doc["columns"]:
        entry = exposure.get(c["name"])
        if entry is None:
            continue
        c["exposure"] = entry
        if entry.get("liveness"):
            c["liveness"] = list(entry["liveness"])
        if c["verdict"] != PASS:
            continue
        if entry.get("exercised") is False:
            c["verdict"] = NOT_EXERCISED
            c["not_exercised"] = list(entry.get("reasons") or [])
        elif entry.get("exercised") is None:
            c["verdict"] = UNKNOWN
            why = entry.get("unknown") or ["a fault that concerns it may not have been applied"]
            c["reasons"] = [*c.get("reasons", []),
                            *(f"exposure not measured: {r}" for r in why)]


def build(
    run: RunData,
    outcomes: list[CheckOutcome],
    counts: dict,
    extras: dict | None = None,
    cap: int = 20,
) -> dict:
    """The verdict.json document of one run as the checks' outcomes judge it, before it
    is finished (exposure, interruption, cross-check, connections and the exit code:
    :func:`verifier.assess.finish.finish`)."""
    faults = fault_kinds(run.nemesis)
    cols = [column_verdict(c, run, outcomes, counts, faults, cap) for c in columns_of(run)]
    unattributed = [{"kind": g.kind, "count": g.count, "sample": g.sample}
                    for o in outcomes for g in o.groups if g.mode == "(unattributed)"]  # fmt: skip
    doc = {
        "format": VERDICT_FORMAT, "version": VERDICT_VERSION, "run": run.config.run,
        "scenario": run.config.scenario, "sink": run.config.sink,
        "drain": {"completed": run.drain.completed, "behind": run.drain.behind},
        "faults": fault_windows(run.nemesis),
        "checks": {o.name: _check_entry(o) for o in outcomes},
        "columns": cols, "unattributed": unattributed, **(extras or {}),
    }  # fmt: skip
    return doc


def _check_entry(o: CheckOutcome) -> dict:
    return {"status": "crashed" if o.error else "ok", "seconds": round(o.seconds, 3),
            "summary": o.summary, "traceback": o.error}  # fmt: skip


def combine(docs: list[dict]) -> dict:
    """Several runs' verdicts as one scenario x column grid (for the chaos orchestrator).

    ``outcomes``: each cell's verdicts, one per run of its scenario in run order (``chaos
    --repeat N``: N of them); ``grid``: the worst of them, what a cell shows first;
    ``repetitions``: how many runs each scenario had. The exit code over every outcome is
    :func:`verifier.assess.exitcodes.set_grid`'s."""
    names: list[str] = []
    for doc in docs:
        names += [c["name"] for c in doc["columns"] if c["name"] not in names]
    outcomes = repeated_outcomes(docs)
    grid = {sc: {c: worst_of(vs) for c, vs in row.items()} for sc, row in outcomes.items()}
    reps: dict[str, int] = {}
    for doc in docs:
        reps[doc["scenario"]] = reps.get(doc["scenario"], 0) + 1
    return {"columns": names, "scenarios": list(grid), "grid": grid, "outcomes": outcomes,
            "repetitions": reps}


def repeated_outcomes(docs: list[dict]) -> dict[str, dict[str, list[str]]]:
    """scenario -> column -> the column's verdict in each run of the scenario, in run
    order. A run whose document lacks a column another run of its scenario has (one that
    crashed before its pipelines were planned) counts UNKNOWN there: it could not
    establish it."""
    runs: dict[str, list[dict]] = {}
    for doc in docs:
        runs.setdefault(doc["scenario"], []).append(doc)
    out: dict[str, dict[str, list[str]]] = {}
    for sc, group in runs.items():
        names: list[str] = []
        for doc in group:
            names += [c["name"] for c in doc["columns"] if c["name"] not in names]
        verdicts = [{c["name"]: c["verdict"] for c in doc["columns"]} for doc in group]
        out[sc] = {n: [v.get(n, UNKNOWN) for v in verdicts] for n in names}
    return out


def tally(outcomes: list[str]) -> list[tuple[str, int]]:
    """(verdict, how many times) of a cell's outcomes, worst first, as a cell shows them
    (``FAIL 2/3 · PASS 1/3``)."""
    return [(v, outcomes.count(v)) for v in reversed(VERDICT_ORDER) if v in outcomes]


def worst_of(verdicts: list[str]) -> str:
    """The worst of several verdicts in :data:`VERDICT_ORDER` (UNKNOWN for none)."""
    out: str | None = None
    for v in verdicts:
        out = _worst(out, v)
    return out or UNKNOWN


def _worst(a: str | None, b: str) -> str:
    order = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return b if a is None or order[b] > order[a] else a
