"""An aggregating application judged by the reference oracle (issue 47): its output, a
state per key (a Kafka Streams count per key), against the same application run without
faults over the same input log after the drain. The comparison is the pipelines'
(verifier.judge.reference.compare, final state per key); this module says what each
difference of a **count** means under the claim (docs/applications.md):

=====================================  ======================  =============  ============
a key's final count                    kind (its amount)       at-least-once  exactly-once
=====================================  ======================  =============  ============
above the reference's                  ``duplicate-delivery``  tolerated      forbidden
                                       (the surplus: records
                                       counted again)
below the reference's, or the key      ``lost`` (the           forbidden      forbidden
missing                                shortfall)
a key the reference never had          ``foreign-record``      forbidden      forbidden
a different final value where one of   ``foreign-record`` at   UNKNOWN        forbidden
the two is no whole number (``--app    read_committed under    (reason)       (rc)
-oracle reference``: any value)        exactly-once, else
                                       UNKNOWN with it
=====================================  ======================  =============  ============

(at read_uncommitted an exactly-once application's surplus is tolerated, as the
expectation table's ``app/exactly-once`` row says: aborted updates are visible there.)
A value that is no whole number has no "above" or "below": a different one is forbidden
only where every difference is (exactly-once at read_committed); under any other claim,
or at read_uncommitted, it cannot be told apart from an update applied again (or an
aborted one), so the column is UNKNOWN with that reason and the key in the detail, never
PASS, and FAIL only on a difference that backs it.
So exactly-once means every key's final count equal to the reference's; at-least-once no
key's count below it. An update written more often than once (compare's *extra*) is
reported in the detail, not judged: which intermediate counts an aggregation writes
depends on its cache and its commits. Every differing key is in the column's detail
(``differences``: key, output, reference, delta), the first ``cap`` of each kind in its
samples. The comparison is impossible (UNKNOWN with the reason, never PASS) when the
reference run failed or was not read back, or counted other than the input log's records.
"""

from __future__ import annotations

import pyarrow as pa

from verifier.judge.model import DUP_DELIVERY, FOREIGN, LOST, UNSEEN, CheckOutcome, Group
from verifier.judge.reference import DIFFERENT, EXTRA, MISSING, Comparison, compare

KEYS = ("key",)
KINDS = (LOST, UNSEEN, DUP_DELIVERY, FOREIGN)
OVER, UNDER = "over-count", "under-count"
#: a differing key where one value is no whole number (decided by the claim: judge_state)
OTHER_VALUE = "other-value"


def _count(row: dict | None) -> int | None:
    try:
        return int(row["value"]) if row else None
    except (TypeError, ValueError, KeyError):
        return None


def count_differences(got: Comparison) -> list[dict]:
    """Every differing key of a keyed comparison (its samples must hold them all):
    ``{key, output, reference, delta, kind, difference}``; counts as ints where both are."""
    out = []
    for s in got.samples[MISSING]:
        ref = _count(s["reference"])
        out.append({"key": s["reference"]["key"], "output": None, "reference": ref,
                    "delta": -ref if ref is not None else None, "kind": LOST,
                    "difference": "missing: the fault-free run counted this key, the "
                                  "output never did"})
    for s in got.samples[DIFFERENT]:
        mine, theirs = s["output"], s["reference"]
        a, b = _count(mine), _count(theirs)
        key = (mine or theirs)["key"]
        if theirs is None:
            out.append({"key": key, "output": a, "reference": None, "delta": None,
                        "kind": FOREIGN, "difference": "a key the fault-free run never "
                                                       "counted"})
        elif a is None or b is None:
            out.append({"key": key, "output": mine["value"], "reference": theirs["value"],
                        "delta": None, "kind": OTHER_VALUE,
                        "difference": "a different final value, not a whole number"})
        elif a > b:
            out.append({"key": key, "output": a, "reference": b, "delta": a - b,
                        "kind": DUP_DELIVERY,
                        "difference": f"{OVER} by {a - b}: counted more often than by "
                                      "the fault-free run"})
        else:
            out.append({"key": key, "output": a, "reference": b, "delta": a - b,
                        "kind": LOST, "difference": f"{UNDER} by {b - a}: counted less "
                                                    "often than by the fault-free run"})
    return sorted(out, key=lambda d: str(d["key"]))


def judge_state(label: str, column: str, isolation: str, faulted: pa.Table,
                reference: pa.Table, inputs: int | None = None, cap: int = 20,
                behind: dict | None = None, guarantee: str = "exactly-once",
                claim: str = "final count per key") -> CheckOutcome:
    """The column ``column`` (of application ``label``, which claims ``guarantee``) at
    ``isolation``: ``faulted`` and ``reference`` are state tables (key, value, the order
    column); ``inputs``, the input log's records, which the reference's counts must add up
    to (None: unchecked, as for a user's command, whose values need not be counts);
    ``behind``: the partitions the faulted group had not committed to their end when the
    drain gave up (then a count below the reference's is ``unseen``, not ``lost``)."""
    from verifier.rundata.app_reference import COMPARED

    outcome = CheckOutcome(column, KINDS)
    cols = [*COMPARED, "__order"]
    everything = faulted.num_rows + reference.num_rows + 1  # every key in the samples
    got = compare(faulted.select(cols), reference.select(cols), KEYS, cap=everything)
    diffs = count_differences(got) if not got.unjudgeable else []
    counted = sum(c for r in _final_counts(reference) if (c := _count(r)) is not None)
    detail = {k: v for k, v in got.to_json().items() if k != "samples"}
    detail.update({"claim": claim, "differences": diffs,
                   "reference_total": counted,
                   "repeated_updates": got.counts[EXTRA]})  # reported, not judged
    detail["counts"] = {k: v for k, v in detail["counts"].items() if k != EXTRA}
    outcome.detail = detail
    if got.unjudgeable:
        outcome.unjudged = f"the reference oracle cannot judge it: {got.unjudgeable}"
        return outcome
    if inputs is not None and counted != inputs:
        outcome.unjudged = (f"the reference oracle cannot judge it: the fault-free run "
                            f"counted {counted} records, the input log holds {inputs} "
                            f"(read_committed): its output is not complete")
        return outcome
    if behind:  # the application had not got there: not lost, not judged either
        for d in diffs:
            if d["kind"] == LOST:
                d["kind"] = UNSEEN
                d["difference"] += f" (its group was behind at the drain's end: {behind})"
    other = [d for d in diffs if d["kind"] == OTHER_VALUE]
    if other and (guarantee != "exactly-once" or isolation != "read_committed"):
        d = other[0]
        outcome.unjudged = (
            f"the reference oracle cannot judge {len(other)} key(s) whose final value is "
            f"no whole number and differs from the fault-free run's (e.g. {d['key']!r}: "
            f"{d['output']!r} against {d['reference']!r}): under {guarantee} at "
            f"{isolation} a different value cannot be told apart from an update applied "
            f"again; every one is in the detail (differences)")
    else:
        for d in other:  # exactly-once at read_committed: every difference is forbidden
            d["kind"] = FOREIGN
    for kind in KINDS:
        mine = [d for d in diffs if d["kind"] == kind]
        if mine:
            n = sum(abs(d["delta"]) if d["delta"] is not None else 1 for d in mine)
            outcome.groups.append(Group(kind, label, isolation, n,
                                        [_sample(label, isolation, d) for d in mine[:cap]]))
    return outcome


def _final_counts(table: pa.Table) -> list[dict]:
    last: dict = {}
    for r in table.sort_by("__order").select(list(KEYS) + ["value"]).to_pylist():
        last[r["key"]] = r
    return list(last.values())


def _sample(label: str, isolation: str, d: dict) -> dict:
    row = {"key": d["key"], "value": None if d["output"] is None else str(d["output"])}
    ref = (None if d["reference"] is None else
           {"key": d["key"], "value": str(d["reference"])})
    return {"kind": d["kind"], "reader": label, "isolation": isolation,
            "row": row if d["output"] is not None else ref, "reference": ref,
            "evidence": {"oracle": "reference", "keys": list(KEYS),
                         "difference": d["difference"], "key": d["key"],
                         "output": d["output"], "in_reference": d["reference"],
                         "delta": d["delta"]}}


def judge_run(run_dir, spec, log_rows: int | None, cap: int = 20
              ) -> tuple[list[CheckOutcome], dict]:
    """Both columns of application ``spec`` (an AppSpec whose oracle is the reference)
    from its run folder files; ``log_rows``: the input log's records (None: unknown)."""
    from verifier.rundata import app_reference as R
    from verifier.rundata.apps import READBACK_FORMAT, AppLayout
    from verifier.rundata.formats import read_json
    from verifier.rundata.vocab import ISOLATIONS

    where = AppLayout(run_dir, spec.name)
    counts: dict = {} if log_rows is None else {"sent": log_rows}
    try:
        behind = read_json(where.readback, READBACK_FORMAT).get("behind") or {}
    except Exception:  # noqa: BLE001 - no drain record: judged as caught up
        behind = {}
    outcomes = []
    try:
        info = R.read_info(where)
    except Exception as exc:  # noqa: BLE001 - the columns are UNKNOWN with it
        info = {"error": f"no reference run recorded: {exc}"}
    reference = None
    if not info.get("error"):
        reference = R.read_state(R.reference_state_path(where))
        counts["reference"] = reference.num_rows
    for iso in ISOLATIONS:
        column = spec.column(iso)
        if reference is None:
            outcome = CheckOutcome(column, KINDS)
            outcome.unjudged = f"its fault-free reference run failed: {info['error']}"
        else:
            faulted = R.read_state(R.state_path(where, iso))
            counts[f"observed_{iso}"] = faulted.num_rows
            preset = getattr(spec, "preset", None)  # a preset's values are counts
            outcome = judge_state(spec.label, column, iso, faulted, reference,
                                  log_rows if preset else None, cap, behind, spec.guarantee,
                                  "final count per key" if preset else
                                  "final value per key (whole numbers as counts)")
            outcome.detail["seconds"] = info.get("seconds")
        outcomes.append(outcome)
    return outcomes, counts


__all__ = ["KINDS", "OTHER_VALUE", "OVER", "UNDER", "count_differences", "judge_run", "judge_state"]
