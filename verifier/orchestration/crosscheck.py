"""After the batch checks: the live result compared with them (issue 16).

The live result is what :mod:`verifier.orchestration.follow` gives (during a run its
follower's, offline the same follower polled once: the live checks' files, their final
states, the histories, drain.json) and :func:`verifier.judge.checks.crosscheck.compare`
holds it against the batch pass; a difference makes the columns concerned UNKNOWN. A
run whose observer ran without live checks is not compared, and says so. In a chaos run
the verdict is the live path's and the batch pass its cross-check (:func:`settle`).
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from verifier.judge import verdict as V
from verifier.judge.checks.crosscheck import compare, mark_disagreement
from verifier.judge.checks.derive import Derived
from verifier.judge.model import RunData


def follow_offline(run_dir: Path | str, run: RunData) -> dict | None:
    """The live result of a finished run, read in one go (``verifier analyze``): the same
    follower as during a run, polled once, on the same definitions."""
    from verifier.orchestration.follow import RunFollower

    return RunFollower(run_dir, run.config).result(run.drain)


def cross_check(run: RunData, d: Derived, doc: dict, run_dir: Path | str, cap: int,
                live: dict | None = None) -> None:
    """Put ``live`` and ``live_vs_batch`` into ``doc``; mark disagreeing columns.
    ``live``: the run's live result (verifier.orchestration.follow) when the run has it
    already; else it is read from the run folder."""
    start = time.perf_counter()
    try:
        got = live if live is not None else follow_offline(run_dir, run)
        if got is None:
            doc["live_vs_batch"] = {"compared": False, "agree": True,
                                    "reason": "the observer ran without live checks"}
            return
        doc["live"] = {iso: st.summary() for iso, st in got["states"].items()}
        section = compare(run, d, got["table"], cap, full=True)
    except Exception as exc:  # noqa: BLE001 - a crashed comparison leaves the verdict open
        section = {"compared": False, "agree": False, "n_differ": 0, "differ": [],
                   "modes": sorted({c["mode"] for c in doc["columns"]}),
                   "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-4000:]}  # fmt: skip
    section["seconds"] = round(time.perf_counter() - start, 3)
    mark_disagreement(doc, section)


def settle(live: dict, batch: dict, seconds: float) -> dict:
    """The run's verdict document: the live path's (``live``, from
    :func:`verifier.orchestration.follow.live_doc`), checked by the batch pass's
    (``batch``, with its ``live_vs_batch``). Where the anomalies differ the columns
    concerned are UNKNOWN with the rows (:func:`mark_disagreement`); where the batch
    pass judged a column otherwise (it also reads the plain reader, and the histories for
    what the live path leaves to it) the column is UNKNOWN with the batch's verdict and
    why; a FAIL the live path found stays FAIL. ``verdict.json`` ``batch`` says what the
    batch pass judged and how long it took."""
    doc = live
    doc["live"] = batch.get("live")
    doc["partition_plots"] = batch.get("partition_plots") or []
    theirs = {c["name"]: c for c in batch.get("columns", [])}
    other = []
    for c in doc["columns"]:
        b = theirs.get(c["name"])
        if b is not None and b["verdict"] != c["verdict"]:
            other.append({"column": c["name"], "live": c["verdict"], "batch": b["verdict"],
                          "forbidden": b["forbidden"], "reasons": b["reasons"]})
    section = batch.get("live_vs_batch") or {"compared": False, "agree": False,
                                             "n_differ": 0, "differ": [], "modes": [],
                                             "error": "the batch pass did not compare"}
    mark_disagreement(doc, section)
    for x in other:
        c = next(c for c in doc["columns"] if c["name"] == x["column"])
        if c["verdict"] in (V.PASS, V.SKIPPED):
            c["verdict"] = V.UNKNOWN
        if c["verdict"] == V.UNKNOWN:
            why = "; ".join([*(f"forbidden {k}" for k in x["forbidden"]), *x["reasons"]])
            c["reasons"] = [*c.get("reasons", []),
                            f"the batch cross-check judged it {x['batch']}"
                            + (f" ({why})" if why else "")]
    if doc.get("exit_code") != V.EXIT_ANOMALY:
        doc["exit_code"] = V.exit_code([c["verdict"] for c in doc["columns"]])
    doc["batch"] = {"seconds": round(seconds, 3), "exit_code": batch.get("exit_code"),
                    "verdicts": {n: c["verdict"] for n, c in theirs.items()},
                    "differ": other, "checks": batch.get("checks"),
                    "agree": bool(section.get("agree")) and not other}  # fmt: skip
    return doc
