"""A pipeline judged from input to output: one tiny hand-written case per anomaly kind,
and the expectation table's pipeline rows."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge import expectations as X
from verifier.judge.model import DUP_DELIVERY, FOREIGN, LOST, UNSEEN
from verifier.judge.pipeline import PipelineSpec, input_log, judge
from verifier.rundata.pipelines import OUTPUT_SCHEMA

RUN = "r1"
SPEC = PipelineSpec("delta", "pipeline:delta", "pipeline/exactly-once", "read_committed")


def ident(seq: int, pid: str = "idempotent-0", p: int = 0) -> dict:
    return {"pid": pid, "p": p, "seq": seq, "ses": 1, "txn": None, "ts_send": 1000 + seq}


def log_of(*records: tuple[int, dict]) -> pa.Table:
    """Observation rows (offset, identity) of topic t, partition 0; each twice, as the
    plain reader and the observer would both have read it."""
    rows = [{"topic": "t", "partition": 0, "offset": off, "foreign": False, **i}
            for off, i in records for _ in range(2)]
    return input_log(pa.Table.from_pylist(rows))


def out_of(*idents: dict, batch: int | None = None) -> pa.Table:
    rows = [{"run": RUN, **i, "foreign": False, "error": None, "batch": batch} for i in idents]
    return pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA)


BATCHES = [{"generation": 0, "batch": 0, "committed": True, "end": {"t-0": 2}},
           {"generation": 0, "batch": 1, "committed": True, "end": {"t-0": 4}}]
ENDS = {"t-0": 4}


def found(outcome) -> dict[str, int]:
    return {g.kind: g.count for g in outcome.groups}


def test_every_record_once_is_clean_and_counted():
    log = log_of((0, ident(0)), (1, ident(1)), (3, ident(2)))
    outcome, counts = judge(SPEC, log, out_of(ident(0), ident(1), ident(2)), BATCHES, ENDS, RUN)
    assert found(outcome) == {} and outcome.error is None
    assert counts == {"sent": 3, "observed": 3, "observed_read_committed": 3}


def test_a_record_written_twice_is_a_duplicate_naming_the_batches():
    log = log_of((0, ident(0)), (3, ident(1)))
    out = pa.concat_tables([out_of(ident(0)), out_of(ident(1), batch=1),
                            out_of(ident(1), batch=1)])
    outcome, _ = judge(SPEC, log, out, BATCHES, ENDS, RUN)
    assert found(outcome) == {DUP_DELIVERY: 1}
    ev = outcome.groups[0].sample[0]["evidence"]
    assert ev["in_log"] == 1 and ev["in_output"] == 2
    assert ev["output_batches"] == [1, 1] and ev["read_by_batches"] == ["0:1"]


def test_a_producer_duplicate_in_the_log_must_be_in_the_output_twice():
    log = log_of((0, ident(0)), (1, ident(0)))  # one identity at two offsets
    assert found(judge(SPEC, log, out_of(ident(0), ident(0)), BATCHES, ENDS, RUN)[0]) == {}
    assert found(judge(SPEC, log, out_of(ident(0)), BATCHES, ENDS, RUN)[0]) == {LOST: 1}


def test_a_missing_record_is_lost_after_the_pipeline_committed_past_it():
    log = log_of((0, ident(0)), (1, ident(1)))
    outcome, _ = judge(SPEC, log, out_of(ident(0)), BATCHES, ENDS, RUN)
    assert found(outcome) == {LOST: 1}
    assert outcome.groups[0].sample[0]["evidence"]["read_by_batches"] == ["0:0"]


def test_a_missing_record_past_the_committed_position_is_unseen():
    uncommitted = [{**BATCHES[0]}, {**BATCHES[1], "committed": False}]
    log = log_of((0, ident(0)), (3, ident(1)))
    assert found(judge(SPEC, log, out_of(ident(0)), uncommitted, ENDS, RUN)[0]) == {UNSEEN: 1}
    # a drain that did not complete: every missing record is unseen
    assert found(judge(SPEC, log, out_of(ident(1)), BATCHES, None, RUN)[0]) == {UNSEEN: 1}


def test_output_rows_that_are_no_input_record_are_foreign():
    log = log_of((0, ident(0)))
    odd = pa.Table.from_pylist([{"run": None, "foreign": True, "error": "not JSON"},
                                {"run": "other", **ident(0), "foreign": False}],
                               schema=OUTPUT_SCHEMA)
    out = pa.concat_tables([out_of(ident(0)), out_of(ident(9)), odd])
    outcome, _ = judge(SPEC, log, out, BATCHES, ENDS, RUN)
    assert found(outcome) == {FOREIGN: 3}


def test_batches_of_a_lost_checkpoint_are_named_by_generation():
    batches = [*BATCHES, {"generation": 1, "batch": 0, "committed": True, "end": {"t-0": 4}}]
    log = log_of((0, ident(0)))
    outcome, _ = judge(SPEC, log, out_of(ident(0), ident(0)), batches, ENDS, RUN)
    assert outcome.groups[0].sample[0]["evidence"]["read_by_batches"] == ["0:0", "1:0"]


def test_the_table_rows_of_the_pipelines():
    rc = "read_committed"
    assert X.expectation("pipeline/exactly-once", rc, DUP_DELIVERY) == X.FORBIDDEN
    assert X.expectation("pipeline/at-least-once", rc, DUP_DELIVERY) == X.TOLERATED
    for g in X.PIPELINE_GUARANTEES:
        assert X.expectation(f"pipeline/{g}", rc, LOST) == X.FORBIDDEN
        assert X.expectation(f"pipeline/{g}", rc, UNSEEN) == X.INCONCLUSIVE
        assert X.expectation(f"pipeline/{g}", rc, FOREIGN) == X.FORBIDDEN
        assert X.expectation(f"pipeline/{g}", rc, "reorder") == X.NA
    # a producer column's duplicate deliveries still follow the observer's sink
    assert X.expectation("idempotent", rc, DUP_DELIVERY, "at-least-once") == X.TOLERATED


def test_batch_in_flight_reads_the_checkpoint(tmp_path):
    from verifier.orchestration.pipelines import PipelineProcess

    proc = PipelineProcess(tmp_path, "delta", tmp_path / "config.json", env={})
    assert proc.batch_in_flight() is False  # no checkpoint yet
    (proc.checkpoint / "offsets").mkdir(parents=True)
    (proc.checkpoint / "commits").mkdir()
    for n in ("0", "1", ".1.crc"):
        (proc.checkpoint / "offsets" / n).write_text("x")
    (proc.checkpoint / "commits" / "0").write_text("x")
    assert proc.batch_in_flight() is True  # batch 1 planned, not committed
    (proc.checkpoint / "commits" / "1").write_text("x")
    assert proc.batch_in_flight() is False
