"""Records retention deleted before a pipeline read them (issue 34, scenario
retention-loss): the pure parts, one tiny hand-written case each. The pipeline under
test, the expectation rows of each failOnDataLoss setting, the stopped query, the
producers not blamed, and the exposure of the retention fault."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.unit.judge.test_pipeline_judge import BATCHES, RUN, found, ident, log_of, out_of
from verifier.judge import expectations as X
from verifier.judge import faults as F
from verifier.judge.faults.facts import Batch, ColumnSpec
from verifier.judge.faults.retention import deleted_unread
from verifier.judge.faults.windows import Window
from verifier.judge.model import LOST, UNSEEN, CheckOutcome, Drain
from verifier.judge.pipeline import PipelineSpec, judge
from verifier.judge.verdict import Column, _entry

SKIPS = PipelineSpec("delta@failOnDataLoss=false", "pipeline:delta@failOnDataLoss=false",
                     X.pipeline_row("exactly-once", False), "read_committed")


def test_the_rows_say_what_each_setting_promises():
    assert X.pipeline_row("exactly-once") == "pipeline/exactly-once"
    stops = Column("p", "p", "pipeline/exactly-once", ("read_committed",))
    skips = Column("p", "p", X.pipeline_row("exactly-once", False), ("read_committed",))
    # true: a loss is forbidden under retention too (the query must stop instead)
    assert _entry(stops, LOST, "exactly-once", {"retention"}) == X.FORBIDDEN
    # false: Spark skips what Kafka no longer holds: expected under the retention fault,
    # forbidden under any other
    assert _entry(skips, LOST, "exactly-once", {"retention", "process-kill"}) == X.EXPECTED
    assert _entry(skips, LOST, "exactly-once", {"process-kill"}) == X.FORBIDDEN
    assert _entry(skips, UNSEEN, "exactly-once", {"retention"}) == X.INCONCLUSIVE
    # the rest of the row is the claimed guarantee's
    dup = "duplicate-delivery"
    assert _entry(skips, dup, "exactly-once", set()) == X.FORBIDDEN


def test_a_record_deleted_before_the_pipeline_read_it_is_lost_and_says_why():
    # offsets 0-3 in the log; the pipeline committed up to 2 before it was held back,
    # retention deleted 2 and 3, and it went on from offset 4 (failOnDataLoss=false)
    log = log_of((0, ident(0)), (1, ident(1)), (2, ident(2)), (3, ident(3)), (4, ident(4)))
    batches = [*BATCHES, {"generation": 0, "batch": 2, "committed": True, "end": {"t-0": 5}}]
    outcome, counts = judge(SKIPS, log, out_of(ident(0), ident(1), ident(4)), batches,
                            {"t-0": 5}, RUN, log_start={"t-0": 4})
    assert found(outcome) == {LOST: 2}
    sample = outcome.groups[0].sample
    assert [r["offset"] for r in sample] == [2, 3]
    assert "retention deleted it before this pipeline read it" in sample[0]["evidence"]["deleted"]
    assert counts["sent"] == 5 and counts["observed"] == 3


def test_a_lost_record_above_the_log_start_carries_no_deletion():
    log = log_of((0, ident(0)), (3, ident(1)))
    outcome, _ = judge(SKIPS, log, out_of(ident(0)), BATCHES, {"t-0": 4}, RUN,
                       log_start={"t-0": 0})
    assert found(outcome) == {LOST: 1}
    assert "deleted" not in outcome.groups[0].sample[0]["evidence"]


def test_a_deleted_record_is_no_reader_s_and_no_producer_s_fault():
    drain = Drain(completed=True, log_start={("t", 0): 40})
    assert drain.deleted("t", 0, 39) and not drain.deleted("t", 0, 40)
    assert not drain.deleted("t", 1, 0) and not drain.deleted("t", 0, None)


def test_lost_skips_sends_acknowledged_below_the_log_start():
    from verifier.judge.definitions import kinds
    from verifier.judge.definitions.frames import Ctx

    combos = [("spark", "read_committed"), ("plain", "read_committed")]
    status = pa.table({"pid": pa.array([], pa.string()), "ses": pa.array([], pa.int64()),
                       "txn": pa.array([], pa.int64()), "status": pa.array([], pa.string()),
                       "abort_intent": pa.array([], pa.bool_())})
    ident_rows = pa.Table.from_pylist([
        # seen by the observer, gone before the plain reader: deleted at offset 5
        {"must_see": True, "s0": True, "s1": False, "pid": "a", "p": 0, "seq": 5,
         "t_send": 1, "ok": True, "transactional": False, "acked_offset": 5},
        # missing from the plain reader above the log start: lost
        {"must_see": True, "s0": True, "s1": False, "pid": "a", "p": 0, "seq": 50,
         "t_send": 2, "ok": True, "transactional": False, "acked_offset": 50},
    ])
    ctx = Ctx(combos=combos, drain=Drain(completed=True, log_start={("t", 0): 10}),
              status=status)
    rows = kinds.lost(ident_rows, ctx, {"topic": "t", "partition": 0})
    assert [(r["kind"], r["offset"], r["reader"]) for r in rows] == [(LOST, 50, "plain")]


def test_a_stopped_query_is_never_pass():
    from verifier.judge.verdict import _reasons_unknown

    col = Column("pipeline:delta", "pipeline:delta", "pipeline/exactly-once",
                 ("read_committed",))
    stopped = CheckOutcome("pipeline:delta", (LOST,), stopped="Partition t-0's offset was "
                           "changed from 3 to 40, some data may have been missed")

    class Run:
        combos = [("spark", "read_committed")]
        drain = Drain(completed=True)
        nemesis: list = []

        class config:  # noqa: N801 - the RunData attribute
            producers: dict = {}

    anomalies = {k: {"count": 0, "expectation": X.FORBIDDEN} for k in X.TABLE[
        ("pipeline/exactly-once", "read_committed")]}
    anomalies[UNSEEN] = {"count": 7, "expectation": X.INCONCLUSIVE}
    reasons = _reasons_unknown(col, Run, [stopped], anomalies, set())
    assert reasons == ["the query stopped with an error: Partition t-0's offset was changed "
                       "from 3 to 40, some data may have been missed",
                       "7 unseen: never read, the query stopped"]
    anomalies[UNSEEN]["count"] = 0
    other = Column("pipeline:file", "pipeline:file", "pipeline/exactly-once",
                   ("read_committed",))
    assert _reasons_unknown(other, Run, [stopped], anomalies, set()) == []


def _window(start_ls, heal_ls) -> Window:
    return Window(2, "retention", {"all": True}, 10_000, 25_000, "ok", None,
                    {"log_start": start_ls}, {"log_start": heal_ls})


def test_the_retention_fault_concerns_the_pipelines_only():
    w = _window({}, {})
    pipe = ColumnSpec("pipeline:delta", "pipeline:delta", (), (), pipeline="delta")
    prod = ColumnSpec("at-least-once", "at-least-once", ("alo-0",), ("t",))
    assert F.concerns(w, pipe, {}) and not F.concerns(w, prod, {"alo-0": "at-least-once"})


def test_exposure_counts_the_records_deleted_past_the_pipeline_s_position():
    # committed up to 30 on t-0 and 5 on t-1 before the window; retention then deleted up
    # to 100 and 80: 70 + 75 records it had not read; a batch committed after the start
    # does not count as read
    batches = [Batch(0, 1_000, 2_000, {("t", 0): (0, 30), ("t", 1): (0, 5)}),
               Batch(1, 9_000, 12_000, {("t", 0): (30, 60), ("t", 1): (5, 9)})]
    w = _window({"t-0": 0, "t-1": 0}, {"t-0": 100, "t-1": 80})
    n, what = deleted_unread(w, batches)
    assert (n, what) == (145, "records deleted by retention before the pipeline read them")
    # nothing deleted past its position: the fault did not act on it (NOT EXERCISED)
    assert deleted_unread(_window({"t-0": 0}, {"t-0": 20}), batches)[0] == 0
    assert deleted_unread(_window({"t-0": 0}, {}).__class__(
        2, "retention", {}, 1, 2, "ok", None, {}, {}), batches)[0] is None


def test_deletion_after_the_heal_counts_as_the_judge_s_lost_does():
    """The heal read t-0's log start at 100; the segments the window's retention made
    eligible were gone by the drain, up to 141 (the judge's `lost` counts below the
    drain's log start: a retention-loss run had 698 lost against an exposure of 657)."""
    batches = [Batch(0, 1_000, 2_000, {("t", 0): (0, 30)})]
    w = _window({"t-0": 0}, {"t-0": 100})
    assert deleted_unread(w, batches, {"t-0": 141})[0] == 111
    assert deleted_unread(w, batches, {"t-0": 90})[0] == 70  # the heal's, when larger
    assert deleted_unread(w, batches, {})[0] == 70


@pytest.mark.parametrize("params, ok", [
    ({}, True), ({"retention_ms": 6000, "segment_ms": 1000}, True),
    ({"retention_ms": 0}, False), ({"retention_ms": True}, False), ({"segment_bytes": 1}, False),
])
def test_the_retention_fault_s_params(params, ok):
    from verifier.harness.faults.spec import parse_spec
    from verifier.rundata.errors import UsageError

    entry = {"kind": "retention", "target": {"all": True}, "start": 1, "duration": 5,
             "params": {**params, "trigger": "pipelines-down"}}
    if ok:
        assert parse_spec(entry, "f").params["trigger"] == "pipelines-down"
    else:
        with pytest.raises(UsageError):
            parse_spec(entry, "f")


def test_a_pipeline_check_that_crashed_leaves_only_its_own_column_unknown():
    """A read-back that failed on one Spark version (PySpark 3.5 had no toArrow) made
    every column of the run UNKNOWN; it concerns that pipeline's column alone."""
    from verifier.judge.verdict import _reasons_unknown

    crashed = CheckOutcome("pipeline:delta@spark-3.5.7", (LOST,), error="Traceback ...",
                           summary="RunFormatError: its output could not be read back")

    class Run:
        combos = [("spark", "read_committed")]
        drain = Drain(completed=True)
        nemesis: list = []

        class config:  # noqa: N801 - the RunData attribute
            producers: dict = {}

    from verifier.judge.model import KINDS

    anomalies = {k: {"count": 0, "expectation": X.NA} for k in KINDS}
    anomalies[LOST]["expectation"] = X.FORBIDDEN
    own = Column("pipeline:delta@spark-3.5.7", "pipeline:delta@spark-3.5.7",
                 "pipeline/exactly-once", ("read_committed",))
    other = Column("pipeline:delta@spark-4.2.0", "pipeline:delta@spark-4.2.0",
                   "pipeline/exactly-once", ("read_committed",))
    producer = Column("at-least-once", "at-least-once", "at-least-once",
                      ("read_committed", "read_uncommitted"))
    assert _reasons_unknown(own, Run, [crashed], anomalies, set()) == [
        "check pipeline:delta@spark-3.5.7 crashed: RunFormatError: its output could not be "
        "read back"]
    assert _reasons_unknown(other, Run, [crashed], anomalies, set()) == []
    assert _reasons_unknown(producer, Run, [crashed], anomalies, set()) == []


def test_batch_planned_wants_a_batch_in_flight_that_reads_records_since_the_start():
    from verifier.harness.faults.probes import batch_planned

    reads = {0: 0, 1: 120, 2: 40}.get
    none_committed = lambda b: False  # noqa: E731
    assert batch_planned([], None, reads, none_committed) is None
    assert batch_planned([(0, 10.0)], None, reads, none_committed) is None  # empty batch 0
    assert batch_planned([(0, 10.0), (1, 11.0)], None, reads, none_committed) == 1
    assert batch_planned([(0, 10.0), (1, 11.0)], 12.0, reads, none_committed) is None
    assert batch_planned([(1, 11.0), (2, 13.0)], 12.0, reads, none_committed) == 2
    assert batch_planned([(1, 11.0), (2, 13.0)], None, reads, lambda b: b == 2) is None
