"""A consumer application judged from input to output topic (issue 47): one tiny
hand-written case per anomaly kind, and the expectation table's application rows."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge import expectations as X
from verifier.judge.application import AppSpec, judge, reordered
from verifier.judge.model import DUP_DELIVERY, FOREIGN, LOST, REORDER, UNSEEN
from verifier.judge.pipeline import input_log
from verifier.rundata.apps import READBACK_SCHEMA

RUN = "r1"
RC, RU = "read_committed", "read_uncommitted"
APP = AppSpec("copier-commit-after", "at-least-once", ("t",), "r1.app.copier-commit-after.out")


def ident(seq: int, p: int = 0) -> dict:
    return {"pid": "idempotent-0", "p": p, "seq": seq, "ses": 1, "txn": None,
            "ts_send": 1000 + seq}


def log_of(n: int, partition: int = 0) -> pa.Table:
    """Records 0..n-1 of topic t at offsets 0..n-1 of ``partition``."""
    return input_log(pa.Table.from_pylist(
        [{"topic": "t", "partition": partition, "offset": i, "foreign": False,
          **ident(i, partition)} for i in range(n)]))


def out_of(*seqs: int, out_partition: int = 0, p: int = 0) -> pa.Table:
    """The output topic's partition ``out_partition`` holding copies of ``seqs`` in order."""
    rows = [{"run": RUN, **ident(s, p), "foreign": False, "error": None, "batch": None,
             "task": None, "out_topic": APP.output_topic, "out_partition": out_partition,
             "out_offset": i} for i, s in enumerate(seqs)]
    return pa.Table.from_pylist(rows, schema=READBACK_SCHEMA)


def found(outcome) -> dict[str, int]:
    return {g.kind: g.count for g in outcome.groups}


def test_every_input_record_once_in_order_is_clean():
    outcome, counts = judge(APP, RC, log_of(4), out_of(0, 1, 2, 3), {"t-0": 4}, RUN)
    assert found(outcome) == {} and outcome.name == "app:copier-commit-after@read_committed"
    assert counts["sent"] == 4 and counts["observed"] == 4


def test_a_record_missing_below_the_groups_committed_offset_is_lost():
    # commit before processing: offsets 0..3 committed, the instance killed before it
    # wrote 2 and 3; nothing will read them again
    outcome, _ = judge(APP, RC, log_of(4), out_of(0, 1), {"t-0": 4}, RUN)
    assert found(outcome) == {LOST: 2}
    assert [r["offset"] for r in outcome.groups[0].sample] == [2, 3]


def test_a_record_missing_at_or_past_the_committed_offset_is_unseen():
    outcome, _ = judge(APP, RC, log_of(4), out_of(0, 1), {"t-0": 2}, RUN)
    assert found(outcome) == {UNSEEN: 2}
    assert found(judge(APP, RC, log_of(4), out_of(0, 1), {}, RUN)[0]) == {UNSEEN: 2}


def test_a_record_written_again_is_a_duplicate_not_a_reorder():
    # commit after processing: killed after writing 0..3, its offsets at 2: the next
    # owner writes 2 and 3 again
    outcome, _ = judge(APP, RC, log_of(4), out_of(0, 1, 2, 3, 2, 3), {"t-0": 4}, RUN)
    assert found(outcome) == {DUP_DELIVERY: 2}


def test_records_out_of_their_input_order_in_one_output_partition_are_reordered():
    outcome, _ = judge(APP, RC, log_of(4), out_of(0, 2, 1, 3), {"t-0": 4}, RUN)
    assert found(outcome) == {REORDER: 1}
    row = outcome.groups[0].sample[0]
    assert row["offset"] == 1 and row["evidence"]["after_input_offset"] == 2
    assert row["evidence"]["output_offset"] == 2


def test_order_is_per_output_partition():
    out = pa.concat_tables([out_of(0, 2, out_partition=0), out_of(1, 3, out_partition=1)])
    assert reordered(log_of(4), out, APP.label, RC) == []
    assert found(judge(APP, RC, log_of(4), out, {"t-0": 4}, RUN)[0]) == {}


def test_order_is_per_input_partition():
    log = pa.concat_tables([log_of(2, partition=0), log_of(2, partition=1)])
    out = pa.concat_tables([out_of(1, p=1), out_of(0, p=0)])  # one output partition
    out = out.set_column(out.schema.get_field_index("out_offset"), "out_offset",
                         pa.array([0, 1], pa.int64()))
    assert reordered(log, out, APP.label, RC) == []
    wrong = pa.concat_tables([out_of(1, 0, p=0)])
    assert len(reordered(log_of(2), wrong, APP.label, RC)) == 1


def test_an_output_record_that_is_no_input_record_is_foreign():
    outcome, _ = judge(APP, RC, log_of(2), out_of(0, 1, 7), {"t-0": 2}, RUN)
    assert found(outcome) == {FOREIGN: 1}


def test_each_claim_decides_by_its_row():
    assert X.expectation(X.app_row("at-least-once"), RC, LOST) == X.FORBIDDEN
    assert X.expectation(X.app_row("at-least-once"), RC, DUP_DELIVERY) == X.TOLERATED
    assert X.expectation(X.app_row("at-most-once"), RC, LOST) == X.TOLERATED
    assert X.expectation(X.app_row("at-most-once"), RC, DUP_DELIVERY) == X.FORBIDDEN
    assert X.expectation(X.app_row("exactly-once"), RC, DUP_DELIVERY) == X.FORBIDDEN
    assert X.expectation(X.app_row("exactly-once"), RC, REORDER) == X.FORBIDDEN
    # aborted transactions are visible at read_uncommitted
    assert X.expectation(X.app_row("exactly-once"), RU, DUP_DELIVERY) == X.TOLERATED
    assert X.expectation(X.app_row("exactly-once"), RU, LOST) == X.FORBIDDEN
    # unseen leaves a claim that forbids loss open
    assert X.expectation(X.app_row("exactly-once"), RC, UNSEEN) == X.INCONCLUSIVE
