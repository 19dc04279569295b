"""The one function that finishes a run's verdict document, and sets its exit code.

A pass (the live path after the drain, :mod:`verifier.assess.live`; the batch pass,
:mod:`verifier.assess.batch`; a run that could not complete, ``crashed_doc``) builds the
document from its outcomes and hands it over as a :class:`Judged`: the document, the
run's :class:`~verifier.assess.facts.RunFacts` and, when there is one, the cross-check
of the live result against the batch pass. :func:`finish` adds, always in this order:

1. the cross-check: columns where the two paths name different anomalies are UNKNOWN;
   when the verdict is the live path's, a column the batch pass judged otherwise is
   UNKNOWN too, with the batch's verdict and why (:class:`CrossCheck`);
2. each column's exposure: a PASS that a concerning fault missed is NOT EXERCISED;
3. the foreign fences: a column whose generator a producer that is not the tool's fenced
   cannot PASS (UNKNOWN, a FAIL stays; verifier.judge.fencing); the interruption: a run a
   signal stopped cannot PASS (UNKNOWN, a FAIL stays);
4. the faults that did not run: its passing columns are SKIPPED;
5. the connection report, the advice comparison and the self-test's table;
6. the run's metadata (its folder, phases, notes), then the exit code
   (:func:`verifier.assess.exitcodes.set_run`).

It never changes the document it is given: a live verdict is finished once for the screen
right after the drain (its cross-check pending) and again with the batch pass's result,
each time from the same built document; the run's facts compute the exposure and the
connection report once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from verifier.assess import exitcodes as X
from verifier.assess.facts import RunFacts
from verifier.judge import verdict as V
from verifier.judge.checks.crosscheck import mark_disagreement
from verifier.judge.duplicate_window import add_duplicate_windows
from verifier.judge.fencing import fencing_reasons, mark_foreign_fences

#: the live verdict's cross-check while the batch pass still runs
PENDING = {"compared": False, "agree": True, "reason": "the batch cross-check is running"}


@dataclass(frozen=True)
class CrossCheck:
    """The live result held against the batch pass (``verdict.json`` ``live_vs_batch``).

    ``batch`` is the batch pass's built document when the verdict is the live path's (a
    chaos run; ``{}`` when the batch pass crashed), None when the batch pass made the
    verdict itself (``verifier analyze``)."""

    section: dict
    live: dict | None = None  # the live states' summary (verdict.json ``live``)
    batch: dict | None = None
    seconds: float = 0.0  # how long the batch pass took (a chaos run's ``batch``)


@dataclass
class Judged:
    """What a pass hands to :func:`finish`."""

    doc: dict  # verifier.judge.verdict.build's document with the pass's extras
    facts: RunFacts
    cross: CrossCheck | None = None


@dataclass(frozen=True)
class Ending:
    """What the orchestration adds when it finishes a document."""

    #: the scenario's faults that did not run here (the environment cannot)
    skipped_faults: tuple[str, ...] = ()
    #: add the connection report (off for the live verdict shown before it is read)
    connections: bool = True
    #: a column's advice (verifier.judge.advice.Advice) or None: ``chaos`` compares them
    advice: Callable[[dict], object | None] | None = None
    selftest: dict | None = None  # ``chaos --selftest``: the run's self-test table
    meta: Mapping = field(default_factory=dict)  # run_dir, phases, notes, repetition...


def finish(judged: Judged, ending: Ending = Ending()) -> dict:
    """The finished ``verdict.json`` document of ``judged`` (see the module's steps)."""
    facts, doc = judged.facts, _copy(judged.doc)
    if judged.cross is not None:
        _cross_checked(doc, judged.cross, facts)
    _exposed_and_interrupted(doc, facts)
    add_duplicate_windows(doc, facts.run_dir)  # a pipeline's replays against its trigger
    mark_skipped(doc, ending.skipped_faults)
    if ending.connections:
        doc["connections"] = facts.connections(doc.get("faults") or [])
    if ending.advice is not None:
        doc["advice_check"] = _advice_rows(doc, facts, ending.advice)
    if ending.selftest is not None:
        doc["selftest"] = ending.selftest
    doc.update(ending.meta)
    X.set_run(doc)
    return doc


def _copy(doc: dict) -> dict:
    """A copy the marks may change: they replace a column's fields, never edit them."""
    return {**doc, "columns": [dict(c) for c in doc["columns"]]}


def _exposed_and_interrupted(doc: dict, facts: RunFacts) -> None:
    V.apply_exposure(doc, facts.exposure(doc))
    if facts.config is not None:  # a generator fenced by a producer not the tool's
        mark_foreign_fences(doc, fencing_reasons(facts.layout.histories, {
            pid: p.mode for pid, p in facts.config.producers.items()}))
    if facts.interrupted is not None:
        mark_interrupted(doc, facts.interrupted)


def _alone(doc: dict, facts: RunFacts, section: dict | None = None) -> dict[str, dict]:
    """Each column as one pass judges it alone: its own cross-check marks (``section``),
    the exposure and the interruption; by name."""
    doc = _copy(doc)
    if section is not None:
        mark_disagreement(doc, section)
    _exposed_and_interrupted(doc, facts)
    return {c["name"]: c for c in doc["columns"]}


def _cross_checked(doc: dict, cross: CrossCheck, facts: RunFacts) -> None:
    """Step 1: ``live_vs_batch`` and its marks; with the batch pass's document (the
    verdict is the live path's), also what the batch pass judged and where it judged a
    column otherwise (``verdict.json`` ``batch``): such a column is UNKNOWN with the
    batch's verdict and why; a FAIL the live path found stays FAIL."""
    if cross.batch is None:
        if cross.live is not None:
            doc["live"] = cross.live
        mark_disagreement(doc, cross.section)
        return
    doc["live"] = cross.live
    doc["partition_plots"] = cross.batch.get("partition_plots") or []
    ours = _alone(doc, facts)
    theirs = _alone(cross.batch, facts, cross.section) if cross.batch else {}
    other = []
    for c in doc["columns"]:
        b, mine = theirs.get(c["name"]), ours[c["name"]]["verdict"]
        if b is not None and b["verdict"] != mine:
            other.append({"column": c["name"], "live": mine, "batch": b["verdict"],
                          "forbidden": b["forbidden"], "reasons": b["reasons"]})
    mark_disagreement(doc, cross.section)
    for x in other:
        c = next(c for c in doc["columns"] if c["name"] == x["column"])
        if c["verdict"] in (V.PASS, V.SKIPPED):
            c["verdict"] = V.UNKNOWN
        if c["verdict"] == V.UNKNOWN:
            why = "; ".join([*(f"forbidden {k}" for k in x["forbidden"]), *x["reasons"]])
            c["reasons"] = [*c.get("reasons", []),
                            f"the batch cross-check judged it {x['batch']}"
                            + (f" ({why})" if why else "")]
    # its exit code, beside the run's: exitcodes.set_run
    doc["batch"] = {"seconds": round(cross.seconds, 3),
                    "verdicts": {n: c["verdict"] for n, c in theirs.items()},
                    "differ": other, "checks": cross.batch.get("checks"),
                    "agree": bool(cross.section.get("agree")) and not other}  # fmt: skip


def mark_interrupted(doc: dict, reason: str) -> None:
    """An interrupted run is no complete run: a column that would PASS (or be SKIPPED) is
    UNKNOWN, with the reason; a FAIL stays (the forbidden anomaly was seen)."""
    doc["interrupted"] = reason
    why = (f"the run was interrupted ({reason}): its load, faults or drain did not finish, "
           "so this is not the verdict of a complete run")
    for c in doc["columns"]:
        if c["verdict"] in (V.PASS, V.SKIPPED):
            c["verdict"] = V.UNKNOWN
            c["reasons"] = [*c.get("reasons", []), why]


def mark_skipped(doc: dict, skipped_faults: tuple[str, ...] | list[str]) -> None:
    """A scenario whose faults did not run showed nothing about them: its passing columns
    are SKIPPED, with the reason (a FAIL stays: the anomaly was real; an UNKNOWN stays)."""
    if not skipped_faults:
        return
    reason = "the scenario's faults did not run: " + "; ".join(skipped_faults)
    doc["skipped_faults"] = list(skipped_faults)
    for c in doc["columns"]:
        if c["verdict"] == V.PASS:
            c["verdict"] = V.SKIPPED
            c["skipped"] = reason


def _advice_rows(doc: dict, facts: RunFacts, advice: Callable) -> list[dict]:
    """Every column's observed anomaly kinds against its configuration's advice under the
    run's fault classes (``verdict.json`` ``advice_check``; verifier.judge.advice)."""
    from verifier.judge.advice import compare, fault_classes

    faults = fault_classes(facts.scenario_faults)
    rows = []
    for col in doc.get("columns", []):
        got = advice(col)
        if got is not None:
            rows.append({**compare(got, col, faults), "scenario": doc.get("scenario", "?")})
    return rows
