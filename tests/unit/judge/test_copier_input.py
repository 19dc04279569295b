"""The copier judged from its input (verifier.judge.copier): an input record below the
copier's highest copy of its partition, with no copy, was skipped (lost)."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge.copier import judge, skipped
from verifier.judge.model import LOST, ProducerSpec, RunConfig

IN, OUT = "r.idempotent", "r.copier"


def _input(p: int, offsets) -> list[dict]:
    return [{"topic": IN, "partition": p, "offset": o, "pid": "idempotent-0", "p": p,
             "seq": o, "ts_send": 1000 + o} for o in offsets]


def _copies(p: int, offsets) -> list[dict]:
    return [{"topic": OUT, "partition": p, "offset": 100 + o, "pid": "copier-0", "p": p,
             "seq": o, "ts_send": 2000 + o} for o in offsets]


def test_every_input_record_copied_is_clean():
    log = _input(0, range(6)) + _copies(0, range(6)) + _input(1, range(3)) + _copies(1, range(3))
    assert skipped("copier-0", IN, OUT, log) == []


def test_input_below_a_later_copy_with_no_copy_of_its_own_is_lost():
    # KAFKA-15449 on 3.6.2: the group's offsets jumped from 2 to 5 on partition 1
    log = _input(0, range(4)) + _copies(0, range(4)) + _input(1, range(8)) + \
        _copies(1, [0, 1, 5, 6, 7])
    found = skipped("copier-0", IN, OUT, log)
    assert [(r["partition"], r["offset"]) for r in found] == [(1, 2), (1, 3), (1, 4)]
    assert all(r["kind"] == LOST and r["evidence"]["copied_up_to"] == 7 for r in found)


def test_the_input_past_the_last_copy_is_not_judged():
    # the copier stops with the load, behind its input: not copied yet, not skipped
    log = _input(0, range(10)) + _copies(0, range(4)) + _input(2, range(3))
    assert skipped("copier-0", IN, OUT, log) == []


def test_another_producers_records_on_the_output_are_not_copies():
    log = _input(0, range(3)) + _copies(0, [2]) + [
        {"topic": OUT, "partition": 0, "offset": 9, "pid": "other", "p": 0, "seq": 0,
         "ts_send": 1}]
    assert [r["offset"] for r in skipped("copier-0", IN, OUT, log)] == [0, 1]


def test_judge_groups_them_under_the_copier_column_at_read_committed():
    config = RunConfig(run="r", scenario="s", sink="exactly-once", producers={
        "idempotent-0": ProducerSpec("idempotent-0", "idempotent", "idempotent", IN),
        "copier-0": ProducerSpec("copier-0", "copier", "transactional", OUT, IN)})
    log = pa.Table.from_pylist(_input(0, range(5)) + _copies(0, [0, 4]))
    (outcome,) = judge(config, log)
    (group,) = outcome.groups
    assert (group.kind, group.mode, group.isolation, group.count) == (
        LOST, "copier", "read_committed", 3)
    clean = pa.Table.from_pylist(_input(0, range(2)) + _copies(0, range(2)))
    assert judge(config, clean)[0].groups == []
