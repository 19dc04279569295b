"""Completeness per (topic, partition, reader, isolation): a reader behind on one
partition leaves only that part open; a loss elsewhere is still a loss (issue 22)."""

from __future__ import annotations

import pytest

from tests.unit.judge.builders import ALL, RunBuilder
from verifier.judge.model import Drain

BEHIND_U0_SPARK_RC = {"topic": "u", "partition": 0, "isolation": "read_committed",
                      "reason": "observer behind", "observer_position": 1, "end_offset": 2}


def test_loss_in_a_complete_topic_fails_while_another_topic_is_behind(engine):
    b = RunBuilder(engine, mode="at-least-once").producer("q1", "idempotent", "u")
    b.write(0, 0, 0).send(0, 1, offset=1).write(0, 2, 2)  # t-0: seq 1 gone from the log
    b.write(0, 0, 0, pid="q1").send(0, 1, offset=1, pid="q1")
    b.see(0, 1, 1, pid="q1", combos=[c for c in ALL if c != ("spark", "read_committed")])
    b.drain = Drain(completed=False, behind=[BEHIND_U0_SPARK_RC])
    found = b.check("lost")
    assert {(a["pid"], a["isolation"], a["reader"]) for a in found["lost"]} == {
        ("p1", "read_committed", "plain,spark"), ("p1", "read_uncommitted", "plain,spark")}
    assert [(a["pid"], a["isolation"], a["reader"]) for a in found["unseen"]] == [
        ("q1", "read_committed", "spark")]
    cols = b.verdicts()
    assert cols["at-least-once"]["verdict"] == "FAIL"
    assert cols["at-least-once"]["reasons"] == []
    assert cols["idempotent"]["verdict"] == "UNKNOWN"
    assert any("u-0 read_committed for reader spark" in r for r in cols["idempotent"]["reasons"])


def test_record_missing_everywhere_in_a_behind_part_is_lost_for_the_complete_readers(engine):
    b = RunBuilder(engine, mode="at-least-once")
    b.write(0, 0, 0).send(0, 1, offset=1)
    b.drain = Drain(completed=False, behind=[{**BEHIND_U0_SPARK_RC, "topic": "t"}])
    found = b.check("lost")
    got = {(k, a["isolation"], a["reader"]) for k in found for a in found[k]}
    assert got == {("unseen", "read_committed", "spark"), ("lost", "read_committed", "plain"),
                   ("lost", "read_uncommitted", "plain,spark")}  # fmt: skip
    assert b.verdicts()["at-least-once"]["verdict"] == "FAIL"


def test_transactional_column_at_the_other_level_is_not_left_open(engine):
    t = RunBuilder(engine, mode="transactional")
    t.write(0, 0, 0, txn=0).txn(0)
    t.drain = Drain(completed=False, behind=[{**BEHIND_U0_SPARK_RC, "topic": "t"}])
    cols = t.verdicts()
    assert cols["transactional@read_committed"]["verdict"] == "UNKNOWN"
    assert cols["transactional@read_uncommitted"]["verdict"] == "PASS"


@pytest.mark.parametrize(("behind", "part", "expected"), [
    ([], ("t", 0, "plain", "read_uncommitted"), True),  # nothing named: all open
    ([BEHIND_U0_SPARK_RC], ("u", 0, "spark", "read_committed"), True),
    ([BEHIND_U0_SPARK_RC], ("u", 0, "plain", "read_committed"), False),
    ([BEHIND_U0_SPARK_RC], ("u", 0, "spark", "read_uncommitted"), False),
    ([BEHIND_U0_SPARK_RC], ("u", 1, "spark", "read_committed"), False),
    # an open transaction: nothing past the LSO at read_committed; the observer is
    # compared on every other part (drain format 2: per partition)
    ([{"topic": "u", "partition": 0, "reason": "open transaction (LSO < high watermark)"}],
     ("u", 0, "plain", "read_committed"), True),
    ([{"topic": "u", "partition": 0, "reason": "open transaction (LSO < high watermark)"}],
     ("u", 0, "plain", "read_uncommitted"), False),
    ([{"topic": "u", "partition": 0, "reason": "open transaction (LSO < high watermark)"}],
     ("v", 3, "spark", "read_uncommitted"), False),
    ([{"topic": "u", "partition": 0}], ("u", 0, "plain", "read_uncommitted"), True),
])  # fmt: skip
def test_drain_completeness_per_part(behind, part, expected):
    assert Drain(completed=False, behind=behind).incomplete(*part) is expected
    assert Drain(completed=True, behind=behind).incomplete(*part) is False
