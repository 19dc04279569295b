"""The live verdict against the batch pass on recorded runs (issue 16): the batch pass, on
the same data, names exactly the same anomalies as the live path (the definitions are
shared: live = batch on every kind the live path decides). The live path's own cases run
in the unit tier (tests/unit/orchestration/test_live_verdict.py), without a JVM."""

from __future__ import annotations

import pytest

from tests.unit.orchestration.test_live_verdict import _copy, _feed, mutated  # noqa: F401
from verifier.assess.batch import check_live
from verifier.assess.facts import read_facts
from verifier.assess.finish import Judged, finish
from verifier.assess.follow import RunFollower
from verifier.assess.live import live_pass
from verifier.judge.checks.load import load_config
from verifier.rundata.layout import layout

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", ["combined", "late-produce", "mutated"])
def test_live_equals_batch_on_recorded_runs(spark, tmp_path, request, name):
    """The batch pass over the same files finds the same anomalies of every kind the live
    path decides (torn, hanging and inconsistent offsets included), and so the same
    verdicts."""
    if name == "mutated":
        run = request.getfixturevalue("mutated")
    else:
        run = _copy(tmp_path, name)
        _feed(run)
    facts = read_facts(run)
    built, live = live_pass(facts, RunFollower(run, load_config(layout(run).config)))
    judged = check_live(spark, Judged(built, facts), live)
    section = judged.cross.section
    assert section["compared"] and section["agree"], section["differ"]
    assert "torn-transaction" in section["kinds"] and "inconsistent-offset" in section["kinds"]
    doc = finish(judged)
    assert doc["batch"]["agree"], doc["batch"]["differ"]
    assert doc["exit_code"] == doc["batch"]["exit_code"]
