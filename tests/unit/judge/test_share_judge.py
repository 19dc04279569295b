"""A share-group application (KIP-932) judged: a record the broker archived after its
delivery-attempt limit is counted in a class of its own, never as lost; one missing
otherwise below the share-partition start offset is lost."""

from __future__ import annotations

import json

from tests.unit.judge.test_application_judge import RC, RUN, found, log_of, out_of
from verifier.judge import expectations as X
from verifier.judge.application import AppSpec, judge
from verifier.judge.model import ARCHIVED, LOST, UNSEEN
from verifier.orchestration.group_admin import last_attempts
from verifier.rundata.apps import AppLayout

SHARE = AppSpec("java-share-copier", "at-least-once", ("t",), "r1.app.java-share-copier.out")


def test_a_record_got_at_its_last_attempt_and_never_written_is_archived_not_lost():
    # offsets 0..3 below the start offset 4; 1 and 2 not written; 2 was got at its last
    # delivery attempt by an instance that was killed: archived; 1 was not: lost
    outcome, counts = judge(SHARE, RC, log_of(4), out_of(0, 3), {"t-0": 4}, RUN,
                            last_attempts=["t-0@2"])
    assert found(outcome) == {LOST: 1, ARCHIVED: 1}
    assert [r["offset"] for g in outcome.groups for r in g.sample if g.kind == ARCHIVED] == [2]
    assert counts["sent"] == 4


def test_a_last_attempt_that_was_written_is_no_archive():
    outcome, _ = judge(SHARE, RC, log_of(4), out_of(0, 1, 2, 3), {"t-0": 4}, RUN,
                       last_attempts=["t-0@2", "t-0@3"])
    assert found(outcome) == {}
    # past the start offset and not at a last attempt: unseen, as for a consumer group
    outcome, _ = judge(SHARE, RC, log_of(4), out_of(0, 1), {"t-0": 3}, RUN,
                       last_attempts=["t-0@2"])
    assert found(outcome) == {ARCHIVED: 1, UNSEEN: 1}


def test_archived_is_tolerated_where_a_share_group_claims_at_least_once_only():
    for iso in (X.RC, X.RU):
        assert X.expectation("app/at-least-once", iso, ARCHIVED) == X.TOLERATED
        assert X.expectation("app/exactly-once", iso, ARCHIVED) == X.FORBIDDEN
        assert X.expectation("app/at-least-once", iso, LOST) == X.FORBIDDEN


def test_the_instances_last_attempts_are_read_from_their_state_files(tmp_path):
    where = AppLayout(tmp_path, "java-share-copier")
    where.root.mkdir(parents=True)
    where.state_file(0).write_text(json.dumps(
        {"delivery_limit": 2, "last_attempts": ["t-0@7", "t-1@3"]}))
    where.state_file(1).write_text(json.dumps({"delivery_limit": 2,
                                               "last_attempts": ["t-0@7"]}))
    # instance 2 never wrote one
    assert last_attempts(where, 3) == (["t-0@7", "t-1@3"], 2)


def test_a_column_whose_group_ran_another_protocol_is_not_judged():
    import pytest

    from verifier.judge.application import protocol_problem

    protocol_problem({"group_protocol": "consumer", "group_type_seen": "consumer"})
    protocol_problem({})  # no --group-protocol
    protocol_problem({"group_protocol": "consumer", "group_type_seen": None})  # a command
    with pytest.raises(ValueError, match="describes its group as classic"):
        protocol_problem({"group_protocol": "consumer", "group_type_seen": "classic"})


def test_the_drain_stops_waiting_for_a_share_group_once_it_settled_short(tmp_path):
    from verifier.orchestration.group_admin import SETTLE_S, Quiet

    where = AppLayout(tmp_path, "java-share-copier")
    where.root.mkdir(parents=True)
    where.state_file(0).write_text(json.dumps({"at_risk": 0}))
    now = [0.0]
    quiet = Quiet(clock=lambda: now[0])
    short = {"t-0": "1366/1368"}
    assert not quiet.settled(short, where, 1)
    now[0] = SETTLE_S - 1
    assert not quiet.settled(short, where, 1)
    # an instance in a batch: not settled, the wait starts again
    where.state_file(0).write_text(json.dumps({"at_risk": 3}))
    now[0] = SETTLE_S + 1
    assert not quiet.settled(short, where, 1)
    where.state_file(0).write_text(json.dumps({"at_risk": 0}))
    now[0] = 2 * SETTLE_S + 1
    assert quiet.settled(short, where, 1)
    # the offsets moved: not settled
    now[0] += 1
    assert not quiet.settled({"t-0": "1367/1368"}, where, 1)
