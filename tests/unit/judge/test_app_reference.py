"""An aggregating application judged by the reference oracle (verifier.judge.app_reference):
a count per key against a fault-free run's, one hand-written case per difference, what
each claim makes of it, and what leaves its columns UNKNOWN (never PASS)."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge import expectations as X
from verifier.judge.app_reference import count_differences, judge_run, judge_state
from verifier.judge.application import AppSpec
from verifier.judge.model import DUP_DELIVERY, FOREIGN, LOST, UNSEEN
from verifier.judge.reference import ORDER, compare
from verifier.rundata import app_reference as R
from verifier.rundata import apps as A

RC, RU = "read_committed", "read_uncommitted"
LABEL = "app:streams-count-eos"


def state(*updates: tuple[str, int]) -> pa.Table:
    """Output records in read order (one partition)."""
    return R.state_table([{"key": k, "value": str(n), "out_partition": 0, "out_offset": i}
                          for i, (k, n) in enumerate(updates)])


REF = state(("a", 2), ("b", 1), ("a", 3), ("c", 5))  # final: a 3, b 1, c 5 (9 records)


def judged(faulted: pa.Table, inputs: int | None = 9, cap: int = 20, behind=None):
    o = judge_state(LABEL, LABEL + "@" + RC, RC, faulted, REF, inputs, cap, behind)
    return o, {g.kind: g.count for g in o.groups}


def test_the_order_column_is_the_pipelines_oracles():
    assert R.ORDER == ORDER


def test_equal_final_counts_pass_whatever_updates_came_before():
    # the faulted run wrote other intermediate counts (another cache, other commits)
    o, found = judged(state(("a", 1), ("b", 1), ("c", 5), ("a", 3)))
    assert found == {} and o.unjudged is None
    assert o.detail["differences"] == [] and o.detail["claim"] == "final count per key"


def test_an_over_count_is_a_duplicate_delivery_with_its_key_and_amount():
    o, found = judged(state(("a", 3), ("b", 3), ("c", 5)))
    assert found == {DUP_DELIVERY: 2}
    s = o.groups[0].sample[0]
    assert s["row"] == {"key": "b", "value": "3"}
    assert s["reference"] == {"key": "b", "value": "1"}
    assert s["evidence"]["delta"] == 2 and s["evidence"]["key"] == "b"
    assert s["evidence"]["difference"].startswith("over-count by 2")


def test_a_count_below_the_reference_or_a_key_missing_is_lost():
    o, found = judged(state(("a", 1), ("b", 1)))  # a 2 short, c missing (5)
    assert found == {LOST: 7}
    assert [(d["key"], d["delta"]) for d in o.detail["differences"]] == [("a", -2),
                                                                          ("c", -5)]


def test_a_key_the_reference_never_counted_or_no_count_is_foreign():
    _, found = judged(state(("a", 3), ("b", 1), ("c", 5), ("z", 1)))
    assert found == {FOREIGN: 1}
    _, found = judged(state(("a", 3), ("b", "x"), ("c", 5)))
    assert found == {FOREIGN: 1}


def test_what_each_claim_allows_of_a_count():
    def entry(claim, iso, kind):
        return X.expectation(A.PlannedApp("x", (), claim).expect, iso, kind)
    assert entry("at-least-once", RC, DUP_DELIVERY) == X.TOLERATED  # over-counts
    assert entry("at-least-once", RC, LOST) == X.FORBIDDEN
    assert entry("exactly-once", RC, DUP_DELIVERY) == X.FORBIDDEN
    assert entry("exactly-once", RU, DUP_DELIVERY) == X.TOLERATED  # aborted updates read
    assert entry("exactly-once", RU, LOST) == X.FORBIDDEN


def test_every_differing_key_is_in_the_detail_beyond_the_samples_cap():
    o, found = judged(state(("a", 4), ("b", 2), ("c", 6)), cap=1)
    assert found == {DUP_DELIVERY: 3} and len(o.groups[0].sample) == 1
    assert [d["key"] for d in o.detail["differences"]] == ["a", "b", "c"]


def test_repeated_updates_are_reported_not_judged():
    o, found = judged(state(("a", 3), ("a", 3), ("b", 1), ("c", 5)))
    assert found == {} and o.detail["repeated_updates"] == 1


def test_a_short_count_while_the_group_was_behind_is_unseen_not_lost():
    _, found = judged(state(("a", 1), ("b", 1), ("c", 5)), behind={"t-0": "3/9"})
    assert found == {UNSEEN: 2}


def test_a_reference_that_did_not_count_the_whole_input_cannot_judge():
    o, found = judged(state(("a", 3), ("b", 1), ("c", 5)), inputs=10)
    assert found == {} and "counted 9 records, the input log holds 10" in o.unjudged
    empty = judge_state(LABEL, LABEL, RC, state(("a", 1)), state(), 0)
    assert "wrote no rows" in empty.unjudged


def test_count_differences_reads_every_kind_of_the_comparison():
    cols = ["key", "value", ORDER]
    got = compare(state(("a", 5), ("z", 1)).select(cols), REF.select(cols), ("key",),
                  cap=100)
    kinds = {d["key"]: d["kind"] for d in count_differences(got)}
    assert kinds == {"a": DUP_DELIVERY, "b": LOST, "c": LOST, "z": FOREIGN}


SPEC = AppSpec("streams-count-eos", "exactly-once", ("t",), "o", "reference")


def test_both_columns_from_the_run_folder(tmp_path):
    where = A.AppLayout(tmp_path, SPEC.name)
    R.write_state(R.state_path(where, RC), state(("a", 3), ("b", 1), ("c", 5)))
    R.write_state(R.state_path(where, RU), state(("a", 4), ("b", 1), ("c", 5)))
    R.write_state(R.reference_state_path(where), REF)
    R.write_info(where, {"seconds": 12.5, "rows": 4})
    outcomes, counts = judge_run(tmp_path, SPEC, 9)
    by = {o.name: {g.kind: g.count for g in o.groups} for o in outcomes}
    assert by == {SPEC.column(RC): {}, SPEC.column(RU): {DUP_DELIVERY: 1}}
    assert counts == {"sent": 9, "reference": 4, "observed_read_committed": 3,
                      "observed_read_uncommitted": 3}
    assert outcomes[0].detail["seconds"] == 12.5


def test_a_failed_or_missing_reference_run_leaves_both_columns_unknown(tmp_path):
    outcomes, _ = judge_run(tmp_path, SPEC, 9)  # never recorded
    assert [bool(o.unjudged) for o in outcomes] == [True, True]
    R.write_info(A.AppLayout(tmp_path, SPEC.name), {"error": "it exited (1) before"})
    outcomes, _ = judge_run(tmp_path, SPEC, 9)
    assert all("reference run failed: it exited (1)" in o.unjudged for o in outcomes)
    assert not any(o.groups for o in outcomes)


def test_the_column_is_unknown_with_the_reason_and_carries_the_comparison():
    """verdict.json: an application's outcome is named by its column (``app:x@iso``),
    not its mode; its reason and its comparison still reach that column."""
    from types import SimpleNamespace

    from verifier.judge.verdict import Column, column_verdict

    faulted = state(("a", 3), ("b", 2), ("c", 5))
    ok = judge_state(LABEL, LABEL + "@" + RC, RC, faulted, REF, 9)
    short = judge_state(LABEL, LABEL + "@" + RU, RU, faulted, REF, 10)
    run = SimpleNamespace(combos=set(), nemesis=[], start_failures={}, started={},
                          config=SimpleNamespace(producers={}, sink="exactly-once",
                                                 topics_of=lambda m: set()),
                          drain=SimpleNamespace(incomplete_where=lambda *a: []))
    doc = {iso: column_verdict(Column(LABEL + "@" + iso, LABEL, "app/exactly-once", (iso,)),
                               run, [ok, short], {LABEL: {"sent": 9}}, set(), 20)
           for iso in (RC, RU)}
    assert doc[RC]["verdict"] == "FAIL" and doc[RC]["forbidden"] == [DUP_DELIVERY]
    assert doc[RC]["oracle"]["differences"][0]["key"] == "b"
    assert doc[RU]["verdict"] == "UNKNOWN"
    assert "counted 9 records, the input log holds 10" in doc[RU]["reasons"][0]


def test_config_json_routes_an_aggregating_application_to_the_reference(tmp_path):
    from verifier.judge.application import judge_run as judge_apps
    from verifier.judge.checks.load import app_specs

    entry = A.config_entry(A.plan_apps("streams-count-eos", None, 2)[0], "r1", ["r1.t"])
    spec = app_specs({"streams-count-eos": entry})["streams-count-eos"]
    assert spec.oracle == "reference"
    where = A.AppLayout(tmp_path, spec.name)
    for iso in (RC, RU):
        R.write_state(R.state_path(where, iso), state(("a", 4), ("b", 1), ("c", 5)))
    R.write_state(R.reference_state_path(where), REF)
    R.write_info(where, {"seconds": 1.0})
    config = type("Config", (), {"run": "r1", "apps": {spec.name: spec}})
    outcomes, _ = judge_apps(tmp_path, config)  # no input log here: the sum unchecked
    assert [{g.kind: g.count for g in o.groups} for o in outcomes] == [
        {DUP_DELIVERY: 1}, {DUP_DELIVERY: 1}]
    assert all(o.detail["claim"] == "final count per key" for o in outcomes)


def test_the_cell_says_over_and_under_counted():
    from verifier.report.compare import cells

    col = {"name": LABEL + "@" + RC, "verdict": "FAIL", "exposure": None,
           "anomalies": {DUP_DELIVERY: {"count": 3, "expectation": "forbidden"},
                         LOST: {"count": 2, "expectation": "forbidden"}},
           "oracle": {"keys": ["key"], "claim": "final count per key"}}
    text = cells([{"scenario": "s", "run": "r", "columns": [col]}])["s"][col["name"]]["text"]
    assert "3 over-counted x" in text and "2 under-counted x" in text


def test_whole_numbers_of_a_users_command_keep_the_count_semantics():
    o = judge_state("app:user", "app:user@" + RC, RC, state(("a", 4), ("b", 1), ("c", 5)),
                    REF, None, guarantee="at-least-once",
                    claim="final value per key (whole numbers as counts)")
    assert {g.kind: g.count for g in o.groups} == {DUP_DELIVERY: 1} and o.unjudged is None
    o = judge_state("app:user", "app:user@" + RC, RC, state(("a", 2), ("b", 1), ("c", 5)),
                    REF, None, guarantee="at-least-once")
    assert {g.kind: g.count for g in o.groups} == {LOST: 1} and o.unjudged is None


def text_state(*updates: tuple[str, str]) -> pa.Table:
    return R.state_table([{"key": k, "value": v, "out_partition": 0, "out_offset": i}
                          for i, (k, v) in enumerate(updates)])


TEXT_REF = text_state(("a", "x"), ("b", "y1"), ("b", "y2"))  # final: a x, b y2


def test_a_different_value_that_is_no_number_is_unknown_unless_exactly_once_forbids_it():
    faulted = text_state(("a", "x"), ("b", "y2"), ("b", "y1"))  # b's old value last

    def judge(guarantee, iso, table=faulted, ref=TEXT_REF):
        o = judge_state("app:user", "app:user@" + iso, iso, table, ref, None,
                        guarantee=guarantee)
        return o, {g.kind: g.count for g in o.groups}

    o, found = judge("at-least-once", RC)
    assert found == {} and "cannot judge 1 key(s)" in o.unjudged  # never PASS, no FAIL
    assert "'b': 'y1' against 'y2'" in o.unjudged
    assert [(d["key"], d["output"], d["reference"]) for d in o.detail["differences"]] == [
        ("b", "y1", "y2")]
    o, found = judge("exactly-once", RC)
    assert found == {FOREIGN: 1} and o.unjudged is None
    o, found = judge("exactly-once", RU)  # an aborted update may be read there
    assert found == {} and o.unjudged
    o, found = judge("at-least-once", RC, text_state(("a", "x"), ("b", "y2")))
    assert found == {} and o.unjudged is None  # equal values: PASS
    # a whole number against a text is no count either
    o, found = judge("at-least-once", RC, text_state(("a", "3"), ("b", "y2")))
    assert found == {} and o.unjudged
    # a backed difference (a key lost) still FAILs beside the unjudgeable one
    o, found = judge("at-least-once", RC, text_state(("b", "y1")))
    assert found == {LOST: 1} and o.unjudged


def test_a_users_command_is_judged_per_value_not_held_to_the_count_sum(tmp_path):
    user = AppSpec("user", "at-least-once", ("t",), "o", "reference")
    where = A.AppLayout(tmp_path, user.name)
    for iso in (RC, RU):
        R.write_state(R.state_path(where, iso), text_state(("a", "x"), ("b", "y2")))
    R.write_state(R.reference_state_path(where), TEXT_REF)
    R.write_info(where, {"seconds": 1.0})
    outcomes, _ = judge_run(tmp_path, user, 3)  # 3 input records; values are no counts
    assert [(o.unjudged, o.groups) for o in outcomes] == [(None, []), (None, [])]
    assert outcomes[0].detail["claim"] == "final value per key (whole numbers as counts)"
    preset = AppSpec("streams-count-eos", "exactly-once", ("t",), "o", "reference",
                     "streams-count-exactly-once-v2")
    where = A.AppLayout(tmp_path, preset.name)
    for iso in (RC, RU):
        R.write_state(R.state_path(where, iso), REF)
    R.write_state(R.reference_state_path(where), REF)
    R.write_info(where, {"seconds": 1.0})
    outcomes, _ = judge_run(tmp_path, preset, 10)  # a count must add up to the input
    assert all("counted 9 records, the input log holds 10" in o.unjudged for o in outcomes)
