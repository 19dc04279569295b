"""A short run of the whole self-test engine on a small recorded real run
(tests/data/runs/baseline): the copies judged by the Spark batch checks and the live path.
The engine's parts (copies, mutations, the judging of a copy) are unit cases:
tests/unit/judge/test_selftest.py."""

from __future__ import annotations

import pytest

from tests.unit.judge.test_selftest import BASELINE
from verifier.judge.selftest import SelfTestRow, selftest

pytestmark = pytest.mark.integration


def test_selftest_on_a_recorded_run_detects_the_issue_situations(spark, tmp_path):
    """Each copy also goes through the whole live path (the stream checks, then the
    follower's remainder after the drain) and the live path finds the injected kinds the
    Spark observer can show, the same as the batch checks (live = batch)."""
    only = {"foreign-record", "inconsistent-offset", "inconsistent-offset-observer",
            "torn-transaction", "hanging-transaction", "marker-gap"}
    result = selftest(BASELINE, seed=3, keep=tmp_path / "kept", spark=spark, only=only)
    assert [r.mutation for r in result.rows] == [
        "torn-transaction", "hanging-transaction", "inconsistent-offset",
        "inconsistent-offset-observer", "foreign-record", "marker-gap"]
    assert result.ok, result.render()
    assert all(isinstance(r, SelfTestRow) and r.kept is None and not r.live_differ
               for r in result.rows)  # fmt: skip
    found = {r.mutation: r.live_found for r in result.rows}
    assert found["torn-transaction"] == ["lost@read_committed +1",
                                         "torn-transaction@read_committed +1"]
    # the open transaction never meant to abort: the live path's remainder (TxnReads)
    # finds its record read at read_uncommitted by its status, as the batch pass does
    assert found["hanging-transaction"] == ["aborted-read@read_uncommitted +1",
                                            "hanging-transaction +1"]
    assert found["inconsistent-offset-observer"] == [
        "foreign-record@read_uncommitted +1", "inconsistent-offset +1",
        "lost@read_uncommitted +1"]
    assert found["inconsistent-offset"] == []  # the plain reader's: the batch pass's alone
    assert found["marker-gap"] == []
    assert "6/6 mutations as expected: PASS" in result.render()
    assert not (tmp_path / "kept").exists()
