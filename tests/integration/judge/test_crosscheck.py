"""Live against batch on one run: the same rows judged both ways agree; a live result
that misses or adds an anomaly is a disagreement that leaves the mode's verdict UNKNOWN,
with the differing rows (the batch side through Spark; the set-aside rule is a unit case:
tests/unit/judge/test_crosscheck.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.unit.judge.builders import RUN, RunBuilder
from verifier.assess import exitcodes as X
from verifier.judge import verdict as V
from verifier.judge.checks import Derived, run_checks
from verifier.judge.checks.crosscheck import compare, mark_disagreement
from verifier.judge.definitions.stream import LiveChecks, anomaly_table
from verifier.judge.model import DUP_SAME, ISOLATIONS, REORDER
from verifier.rundata.vocab import EXIT_INCOMPLETE

pytestmark = pytest.mark.integration


@pytest.fixture
def run(spark):
    b = RunBuilder(spark, mode="idempotent")
    b.write(0, 0, 0).write(0, 2, 1).write(0, 1, 2)  # a reorder (forbidden)
    b.write(0, 3, 3).see(0, 3, 4)  # a same-session duplicate (forbidden)
    b.send(0, 5, offset=6)  # acknowledged, never read: lost
    b.txn(7, end="abort", abort=True).send(0, 4, txn=7, offset=5).see(0, 4, 5, txn=7, abort=True)
    return b.build()


def live_rows(run, states=None) -> pa.Table:
    rows = run.observations.where("reader = 'spark'").orderBy("offset").toArrow()
    topics = {pid: p.topic for pid, p in run.config.producers.items()}
    out = []
    for iso in ISOLATIONS:
        live = LiveChecks(RUN, iso, topics)
        out += live.apply(rows.filter(pa.compute.equal(rows["isolation"], iso)), 0)
        if states is not None:
            states[iso] = live
    return anomaly_table(out)


def test_the_same_rows_judged_live_and_in_batch_agree(run):
    d = Derived(run)
    states = {}
    try:
        found = compare(run, d, live_rows(run))
        with_lost = compare(run, d, live_rows(run, states), states=states)
    finally:
        d.release()
    assert found["agree"], found["differ"]
    # reorder and duplicate at both levels, aborted at both (abort intent)
    assert found["live"] == found["batch"] == 6
    # and the remainder after the drain: the lost record at both levels
    assert with_lost["agree"], with_lost["differ"]
    assert with_lost["live"] == with_lost["batch"] == 8


def test_a_missing_live_anomaly_is_shown_and_leaves_the_verdict_open(run):
    live = live_rows(run)
    dropped = live.filter(pa.compute.not_equal(live["kind"], DUP_SAME))
    extra = anomaly_table([{**live.slice(0, 1).to_pylist()[0], "kind": REORDER,
                            "seq": 99, "offset": 99}])  # fmt: skip
    d = Derived(run)
    try:
        found = compare(run, d, pa.concat_tables([dropped, extra]))
        doc = V.build(run, run_checks(run, d), {})
    finally:
        d.release()
    assert not found["agree"] and found["modes"] == ["idempotent"]
    assert found["where"] == [("idempotent", "read_committed"), ("idempotent", "read_uncommitted")]
    sides = sorted((x["side"], x["kind"], x["seq"]) for x in found["differ"])
    assert sides == [("batch only", DUP_SAME, 3), ("batch only", DUP_SAME, 3),
                     ("live only", REORDER, 99)]
    # as if the batch checks had found nothing forbidden
    doc["columns"][0]["verdict"] = V.PASS
    mark_disagreement(doc, found)
    assert doc["columns"][0]["verdict"] == V.UNKNOWN
    assert "disagree on 3" in doc["columns"][0]["reasons"][-1]
    assert X.set_run(doc) == EXIT_INCOMPLETE
