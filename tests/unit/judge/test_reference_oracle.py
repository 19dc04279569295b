"""The reference oracle (verifier.judge.reference): one hand-written case per difference."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge.reference import DIFFERENT, EXTRA, MISSING, ORDER, compare


def t(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([{**r, ORDER: i} for i, r in enumerate(rows)])


ORDERS = [{"customer": "a", "total": 10.5}, {"customer": "b", "total": 3.0},
          {"customer": "c", "total": None}]


def test_equal_append_outputs_pass():
    c = compare(t(ORDERS), t(list(reversed(ORDERS))))
    assert c.equal and c.counts == {MISSING: 0, EXTRA: 0, DIFFERENT: 0}


def test_append_replay_is_extra_with_its_row():
    c = compare(t(ORDERS + ORDERS[:1]), t(ORDERS))
    assert c.counts == {MISSING: 0, EXTRA: 1, DIFFERENT: 0}
    assert c.samples[EXTRA][0]["row"] == {"customer": "a", "total": "10.5"}
    assert c.samples[EXTRA][0]["in_output"] == 2 and c.samples[EXTRA][0]["in_reference"] == 1


def test_append_missing_and_different():
    faulted = [ORDERS[0], {"customer": "b", "total": 4.0}, ORDERS[2]]
    c = compare(t(faulted), t(ORDERS))
    assert c.counts == {MISSING: 1, EXTRA: 0, DIFFERENT: 1}
    assert c.samples[MISSING][0]["row"]["total"] == "3"
    assert c.samples[DIFFERENT][0]["row"]["total"] == "4"
    assert c.samples[MISSING][0]["row"]["customer"] == "b"


def test_null_is_compared_as_null():
    c = compare(t([{"customer": "c", "total": 0.0}]), t([{"customer": "c", "total": None}]))
    assert c.counts[MISSING] == 1 and c.samples[MISSING][0]["row"]["total"] is None


WORDS_REF = [{"key": "a", "value": "3"}, {"key": "b", "value": "1"}]


def test_keyed_final_state_equal_replayed_updates_extra():
    # update output: intermediate counts, then a replayed batch wrote ("a", "2") again
    faulted = [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}, {"key": "b", "value": "1"},
               {"key": "a", "value": "2"}, {"key": "a", "value": "3"}]
    c = compare(t(faulted), t(WORDS_REF), keys=["key"])
    assert c.counts == {MISSING: 0, EXTRA: 1, DIFFERENT: 0}
    assert c.samples[EXTRA][0]["row"] == {"key": "a", "value": "2"}


def test_keyed_final_state_is_the_last_in_read_order():
    faulted = [{"key": "a", "value": "3"}, {"key": "a", "value": "4"}, {"key": "b", "value": "1"}]
    c = compare(t(faulted), t(WORDS_REF), keys=["key"])
    assert c.counts == {MISSING: 0, EXTRA: 0, DIFFERENT: 1}
    s = c.samples[DIFFERENT][0]
    assert s["output"] == {"key": "a", "value": "4"}
    assert s["reference"] == {"key": "a", "value": "3"}


def test_keyed_missing_key_and_foreign_key():
    c = compare(t([{"key": "a", "value": "3"}, {"key": "z", "value": "1"}]), t(WORDS_REF),
                keys=["key"])
    assert c.counts == {MISSING: 1, EXTRA: 0, DIFFERENT: 1}
    assert c.samples[MISSING][0]["reference"] == {"key": "b", "value": "1"}
    assert c.samples[DIFFERENT][0]["reference"] is None


def test_varying_column_found_and_left_out():
    ref = [{"k": "a", "n": 1, "at": "10:00"}, {"k": "b", "n": 2, "at": "10:00"}]
    sec = [{"k": "a", "n": 1, "at": "10:05"}, {"k": "b", "n": 2, "at": "10:05"}]
    out = [{"k": "a", "n": 1, "at": "11:00"}, {"k": "b", "n": 2, "at": "11:00"},
           {"k": "b", "n": 2, "at": "11:01"}]
    c = compare(t(out), t(ref), second=t(sec))
    assert c.varying == ["at"] and c.compared == ["k", "n"]
    assert c.counts == {MISSING: 0, EXTRA: 1, DIFFERENT: 0}
    keyed = compare(t(out[:2]), t(ref), keys=["k"], second=t(sec))
    assert keyed.varying == ["at"] and keyed.equal


def test_ignored_columns_are_not_compared():
    c = compare(t([{"k": "a", "at": "1"}]), t([{"k": "a", "at": "2"}]), ignore=["at"])
    assert c.equal and c.ignored == ["at"]


def test_non_deterministic_rows_are_unjudgeable_never_equal():
    ref = [{"k": "a"}, {"k": "b"}]
    sec = [{"k": "a"}]  # a random filter kept fewer rows
    c = compare(t(ref), t(ref), second=t(sec))
    assert not c.equal and "not deterministic enough" in c.unjudgeable


def test_nothing_left_to_compare_is_unjudgeable():
    ref, sec = [{"k": "a", "id": "x1"}], [{"k": "a", "id": "y7"}]
    c = compare(t(ref), t(ref), keys=["k"], second=t(sec))
    assert c.varying == ["id"] and "nothing left to compare" in c.unjudgeable


def test_empty_reference_and_other_columns_are_unjudgeable():
    empty = pa.table({"k": pa.array([], pa.string())})
    assert "no rows" in compare(empty, empty).unjudgeable
    assert "columns" in compare(t([{"x": 1}]), t([{"k": "a"}])).unjudgeable
    assert "KEY_COLUMNS" in compare(t([{"k": "a"}]), t([{"k": "a"}]), keys=["nope"]).unjudgeable


def test_nested_and_binary_values_compare_by_content():
    a = [{"k": b"\x01\xff", "tags": ["x", "y"]}]
    b = [{"k": b"\x01\xff", "tags": ["x", "z"]}]
    c = compare(t(a), t(b))
    assert c.counts[MISSING] == 1 and c.counts[DIFFERENT] == 1
    assert c.samples[DIFFERENT][0]["row"]["k"] == "0x01ff"
