"""One run, one set of counts (issue 38): the verdict a run writes when it ends (the live
path, cross-checked by the batch pass: ``assess.batch.check_live``) and `verifier analyze`
of the same untouched folder (the batch pass, ``assess.batch.analyze``) agree on every
count of every column, on recorded runs whose observer files are fed through the live
checks as the sink would. producer-kill: a killed session's open transaction (not meant
to abort) was read at read_uncommitted; late-produce: a transaction number aborted, then
redone and committed."""

from __future__ import annotations

import pytest

from tests.unit.orchestration.test_live_verdict import _copy, _feed
from verifier.assess.batch import analyze, check_live
from verifier.assess.facts import read_facts
from verifier.assess.finish import Judged, finish
from verifier.assess.follow import RunFollower
from verifier.assess.live import live_pass
from verifier.judge.checks.load import load_config
from verifier.rundata.layout import layout

pytestmark = pytest.mark.integration


def _every_count(doc: dict) -> dict:
    """Per column: its verdict, its counts and each anomaly kind's count; the exit code."""
    out: dict = {"exit_code": doc["exit_code"]}
    for c in doc["columns"]:
        out[c["name"]] = {"verdict": c["verdict"], **c["counts"],
                          **{k: a["count"] for k, a in c["anomalies"].items()}}
    return out


@pytest.mark.parametrize(("name", "aborted_ru"), [("producer-kill", 183), ("late-produce", 72)])
def test_the_run_and_analyze_count_the_same(spark, tmp_path, name, aborted_ru):
    run = _copy(tmp_path, name)
    _feed(run)
    facts = read_facts(run)
    built, live = live_pass(facts, RunFollower(run, load_config(layout(run).config)))
    ran = finish(check_live(spark, Judged(built, facts), live))
    offline = analyze(spark, run)
    assert ran["live_vs_batch"]["agree"], ran["live_vs_batch"]["differ"]
    assert _every_count(ran) == _every_count(offline)
    ru = _every_count(ran)["transactional@read_uncommitted"]
    # every aborted read, meant to abort or not (recorded data: the batch pass's figure)
    assert ru["aborted-read"] == aborted_ru
