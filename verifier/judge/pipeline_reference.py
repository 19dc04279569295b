"""A pipeline judged by the reference oracle (issue 46): its output under faults against
its fault-free runs over the same input log (verifier.judge.reference compares), as the
anomalies of its column.

What each difference is in the expectation table's pipeline rows:

========================================  ======================  =====================
difference                                kind                    at-least-once
========================================  ======================  =====================
a row (or a key's final state) missing    ``lost``                forbidden
a row written again (a replayed batch)    ``duplicate-delivery``  tolerated
a row, or a key's final state, the        ``foreign-record``      forbidden
fault-free run never wrote
========================================  ======================  =====================

Each anomaly's sample names its row (and the reference's row of the same key), never an
input record: an aggregation's row has none. A reference that could not run, or a query
not deterministic enough to compare, leaves the column UNKNOWN with the reason.
"""

from __future__ import annotations

from verifier.judge.model import DUP_DELIVERY, FOREIGN, LOST, UNSEEN, CheckOutcome, Group
from verifier.judge.reference import DIFFERENT, EXTRA, MISSING, compare
from verifier.rundata.columns import pipeline_column
from verifier.rundata.pipelines import PipelineLayout
from verifier.rundata.reference_runs import RUNS, ReferenceLayout, read_info, read_rows

KINDS = (LOST, UNSEEN, DUP_DELIVERY, FOREIGN)
KIND_OF = {MISSING: LOST, EXTRA: DUP_DELIVERY, DIFFERENT: FOREIGN}
WHAT = {MISSING: "missing: the fault-free run wrote it, the output does not hold it",
        EXTRA: "extra: written more often than the fault-free run wrote it",
        DIFFERENT: "different: the fault-free run never wrote it"}


def judge_reference(run_dir, spec, cap: int = 20) -> tuple[CheckOutcome, dict]:
    """The column's outcome (its ``detail``: the comparison without samples) and counts
    (``observed``: output rows; ``reference``: the fault-free run's rows)."""
    layout = ReferenceLayout(PipelineLayout(run_dir, spec.name))
    outcome = CheckOutcome(pipeline_column(spec.name), KINDS)
    info = read_info(layout)
    outcome.stopped = info.get("query_error")  # the faulted query ended with an error
    if not layout.rows.exists():
        outcome.unjudged = f"its output was not read back: {info.get('error')}"
        return outcome, {}
    faulted = read_rows(layout.rows)
    counts = {"observed": faulted.num_rows, f"observed_{spec.isolation}": faulted.num_rows}
    if info.get("error"):
        outcome.unjudged = f"its fault-free reference run failed: {info['error']}"
        return outcome, counts
    runs = [read_rows(layout.run_rows(k)) for k in RUNS if layout.run_rows(k).exists()]
    if not runs:
        outcome.unjudged = "no fault-free reference run was read back"
        return outcome, counts
    got = compare(faulted, runs[0], spec.key_columns, spec.ignore_columns,
                  runs[1] if len(runs) > 1 else None, cap)
    counts["reference"] = runs[0].num_rows
    detail = {k: v for k, v in got.to_json().items() if k != "samples"}
    detail["seconds"] = info.get("seconds")
    outcome.detail = detail
    if got.unjudgeable:
        outcome.unjudged = f"the reference oracle cannot judge it: {got.unjudgeable}"
        return outcome, counts
    for what, n in got.counts.items():
        if n:
            rows = [_sample(spec, what, s, got) for s in got.samples[what]]
            outcome.groups.append(Group(KIND_OF[what], spec.label, spec.isolation, n, rows))
    return outcome, counts


def _sample(spec, what: str, s: dict, got) -> dict:
    ev = {"oracle": "reference", "difference": WHAT[what],
          **{k: s[k] for k in ("copies", "in_output", "in_reference", "output") if k in s}}
    if got.keys:
        ev["keys"] = list(got.keys)
    return {"kind": KIND_OF[what], "reader": spec.label, "isolation": spec.isolation,
            "row": s.get("row"), **({"reference": s["reference"]} if "reference" in s else {}),
            "evidence": ev}


__all__ = ["KINDS", "judge_reference"]
