"""One tiny hand-written case per anomaly kind, and the near miss that must not report it."""

from __future__ import annotations

import pytest

from tests.unit.judge.builders import ALL, RC_ONLY, RU_ONLY, RunBuilder
from verifier.judge.model import Drain


@pytest.fixture
def b(engine):
    return RunBuilder(engine)


def _only(found, kind):
    assert set(found) <= {kind}, found
    return found.get(kind, [])


# -- lost / unseen -------------------------------------------------------------------


def test_acknowledged_record_never_seen_is_lost(b):
    b.write(0, 0, 0).send(0, 1, offset=1).write(0, 2, 2)
    lost = _only(b.check("lost"), "lost")
    assert {(a["partition"], a["seq"], a["isolation"]) for a in lost} == {
        (0, 1, "read_committed"),
        (0, 1, "read_uncommitted"),
    }
    assert lost[0]["evidence"]["in_log"] is False and lost[0]["reader"] == "plain,spark"


def test_record_spark_missed_but_plain_saw_was_in_the_log(b):
    b.write(0, 0, 0, combos=[c for c in ALL if c[0] == "plain"]).write(0, 1, 1)
    lost = _only(b.check("lost"), "lost")
    assert {a["reader"] for a in lost} == {"spark"}
    assert all(a["evidence"]["in_log"] and a["seq"] == 0 for a in lost)


def test_marker_gap_and_unread_info_send_are_not_lost(b):
    # offsets 0, 1, 3: offset 2 is a transaction marker (no record); seq 2 ended info
    # and no reader saw it, so it counts as never written
    b.write(0, 0, 0).write(0, 1, 1).send(0, 2, outcome="info").write(0, 3, 3)
    b.send(0, 4, outcome=None)  # the process died mid-send: info too
    assert b.check("lost") == {}


def test_missing_record_after_incomplete_drain_is_unseen(b):
    b.write(0, 0, 0).send(0, 1, offset=1)
    b.drain = Drain(completed=False, behind=[{"topic": "t", "partition": 0}])
    unseen = _only(b.check("lost"), "unseen")
    assert {a["seq"] for a in unseen} == {1}


# -- duplicates -----------------------------------------------------------------------


def test_same_identity_at_two_offsets_same_session(b):
    b.write(0, 0, 0).write(0, 1, 1).see(0, 1, 2)  # a retried batch appended twice
    dup = _only(b.check("duplicate-log"), "duplicate-same-session")
    assert {(a["seq"], tuple(a["offsets"])) for a in dup} == {(1, (1, 2))}
    assert {a["isolation"] for a in dup} == {"read_committed", "read_uncommitted"}


def test_resend_after_restart_is_cross_session(b):
    b.write(0, 0, 0).send(0, 1, outcome=None).see(0, 1, 1)  # written, never acknowledged
    b.write(0, 1, 2, ses=2)  # the restarted producer re-sends it
    dup = _only(b.check("duplicate-log"), "duplicate-cross-session")
    assert dup[0]["seq"] == 1 and dup[0]["evidence"]["sessions"] == 2
    assert dup[0]["offsets"] == [1, 2]


def test_retry_deduplicated_by_broker_is_no_duplicate(b):
    # the first attempt timed out (info), the retry was acknowledged; one copy in the log
    b.send(0, 0, outcome="info").write(0, 0, 0).write(0, 1, 1)
    assert b.check("duplicate-log") == {}


def test_observer_delivering_one_offset_twice(b):
    b.write(0, 0, 0).see(0, 0, 0, combos=[("spark", "read_committed")])
    dup = _only(b.check("duplicate-delivery"), "duplicate-delivery")
    assert [(a["reader"], a["isolation"], a["offset"]) for a in dup] == [
        ("spark", "read_committed", 0)
    ]
    assert dup[0]["evidence"]["deliveries"] == 2


def test_two_readers_each_delivering_once_is_no_duplicate(b):
    b.write(0, 0, 0).write(0, 1, 1)  # four rows per offset: two readers at two levels
    assert b.check("duplicate-delivery") == {}


# -- reorder --------------------------------------------------------------------------


def test_lower_sequence_at_higher_offset(b):
    b.write(0, 0, 0).write(0, 2, 1).write(0, 1, 2).write(0, 3, 3)
    r = _only(b.check("reorder"), "reorder")
    assert {(a["seq"], a["offset"], a["evidence"]["higher_seq"]) for a in r} == {(1, 2, 2)}


def test_sparse_offsets_and_resend_of_unwritten_record_are_no_reorder(b):
    b.write(0, 0, 0).write(0, 1, 4).send(0, 2, outcome=None).write(0, 3, 9)
    b.write(0, 2, 12, ses=2)  # session 2 re-sends seq 2, never written before
    assert b.check("reorder") == {}


# -- transactions ---------------------------------------------------------------------


@pytest.fixture
def t(engine):
    return RunBuilder(engine, mode="transactional")


def test_aborted_record_read_committed(t):
    t.write(0, 0, 0, txn=0, combos=RU_ONLY).write(1, 0, 0, txn=0, combos=RU_ONLY)
    t.txn(0, end="abort", abort=True)
    t.see(0, 0, 0, txn=0, combos=[("plain", "read_committed")])  # leaked past read_committed
    found = _only(t.check("aborted-read"), "aborted-read")
    rc = [a for a in found if a["isolation"] == "read_committed"]
    assert [(a["partition"], a["offset"], a["reader"], a["txn"]) for a in rc] == [
        (0, 0, "plain", 0)
    ]
    assert rc[0]["evidence"]["txn_status"] == "aborted"


def test_aborted_record_only_read_uncommitted_is_no_aborted_read_committed(t):
    t.write(0, 0, 0, txn=0, combos=RU_ONLY).txn(0, end="abort", abort=True)
    t.write(0, 1, 2, txn=1).txn(1, outcome="info")  # commit timed out, but visible: committed
    found = t.check("aborted-read")
    assert {a["isolation"] for a in found.get("aborted-read", [])} == {"read_uncommitted"}


def test_aborted_attempt_of_a_number_redone_and_committed_is_an_aborted_read(t):
    """A generator redoes a failed transaction under its number and identities (the
    recorded late-produce run: transaction 9 aborted, then committed): the aborted
    attempt's records, meant to abort, are aborted reads though the number committed
    (the live checks judge them by the same ``abort`` field)."""
    t.send(0, 0, txn=9, offset=0).see(0, 0, 0, txn=9, combos=RU_ONLY, abort=True)
    t.txn(9, end="abort", abort=True)
    t.write(0, 0, 2, txn=9).txn(9)
    found = _only(t.check("aborted-read"), "aborted-read")
    assert {(a["offset"], a["isolation"]) for a in found} == {(0, "read_uncommitted")}
    assert found[0]["evidence"] == {"txn_status": "committed", "abort_intent": True}


def test_committed_transaction_partly_visible_is_torn(t):
    t.write(0, 0, 0, txn=0).send(1, 0, txn=0, offset=0).txn(0)
    t.see(1, 0, 0, txn=0, combos=RU_ONLY)  # partition 1's record hidden at read_committed
    torn = _only(t.check("torn-transaction"), "torn-transaction")
    assert {(a["reader"], a["isolation"]) for a in torn} == {
        ("spark", "read_committed"),
        ("plain", "read_committed"),
    }
    assert torn[0]["evidence"] == {"records": 2, "visible": 1, "partitions": [0, 1]}


def test_committed_transaction_fully_visible_is_not_torn(t):
    t.write(0, 0, 0, txn=0).write(1, 0, 0, txn=0).txn(0)
    t.write(0, 1, 2, txn=1, combos=RU_ONLY).txn(1, end="abort", abort=True)
    assert t.check("torn-transaction") == {}


def test_partition_with_lso_below_high_watermark_hangs(t):
    t.write(0, 0, 0, txn=0, combos=RU_ONLY).txn(0, end="commit", outcome=None)
    t.end_offsets(0, rc=0, ru=1).end_offsets(1, rc=5, ru=5)
    h = _only(t.check("hanging-transaction"), "hanging-transaction")
    assert [(a["partition"], a["offsets"]) for a in h] == [(0, [0, 1])]


def test_partitions_at_equal_end_offsets_do_not_hang(t):
    t.end_offsets(0, rc=3, ru=3)
    assert t.check("hanging-transaction") == {}


# -- readers disagree, foreign records -------------------------------------------------


def test_readers_seeing_different_records_at_one_offset(b):
    b.write(0, 0, 0, combos=[c for c in ALL if c[0] == "spark"])
    b.send(0, 1, offset=5).see(0, 1, 0, combos=[c for c in ALL if c[0] == "plain"])
    i = _only(b.check("inconsistent-offset"), "inconsistent-offset")
    assert [(a["partition"], a["offset"]) for a in i] == [(0, 0)]
    assert {i[0]["evidence"]["one"]["seq"], i[0]["evidence"]["other"]["seq"]} == {0, 1}


def test_readers_agreeing_are_consistent(b):
    b.write(0, 0, 0).write(0, 1, 1)
    assert b.check("inconsistent-offset") == {}


def test_undecodable_and_other_run_records_are_foreign(b):
    b.write(0, 0, 0)
    b.see(
        0,
        None,
        1,
        combos=RC_ONLY[:1],
        pid=None,
        run=None,
        ses=None,
        foreign=True,
        error="not JSON: unexpected character",
    )
    b.see(0, 7, 2, combos=RC_ONLY[:1], run="another-run")
    f = _only(b.check("foreign-record"), "foreign-record")
    assert sorted(a["offset"] for a in f) == [1, 2]
    assert "not JSON" in next(a for a in f if a["offset"] == 1)["evidence"]["error"]


def test_observed_identity_no_history_sent_is_foreign(b):
    b.write(0, 0, 0).see(0, 1, 1)  # pid p1 of this run, but seq 1 was never invoked
    f = _only(b.check("foreign-record"), "foreign-record")
    # one per row read, like an undecodable one: each reader at each level, where read
    assert sorted((a["seq"], a["offset"], a["reader"], a["isolation"]) for a in f) == sorted(
        (1, 1, r, i) for r, i in ALL)


def test_records_of_this_run_are_not_foreign(b):
    b.write(0, 0, 0).write(1, 0, 0)
    assert b.check("foreign-record") == {}


def test_committed_transaction_redone_in_its_session_and_partly_visible_is_torn(t):
    # attempt 1: the send to partition 1 failed, the transaction aborted; the same
    # session redid it (same txn, same records) and committed; read_committed readers
    # then saw only partition 0's record
    t.send(0, 0, txn=0, offset=0).send(1, 0, txn=0, outcome="fail").txn(0, end="abort")
    t.send(0, 0, txn=0, offset=1).send(1, 0, txn=0, offset=0).txn(0)
    t.see(0, 0, 0, txn=0, combos=RU_ONLY).see(0, 0, 1, txn=0).see(1, 0, 0, txn=0, combos=RU_ONLY)
    torn = _only(t.check("torn-transaction"), "torn-transaction")
    assert {(a["reader"], a["isolation"], a["txn"]) for a in torn} == {
        ("spark", "read_committed", 0), ("plain", "read_committed", 0)}
    assert torn[0]["evidence"]["records"] == 2 and torn[0]["evidence"]["visible"] == 1
    lost = _only(t.check("lost"), "lost")
    assert {(a["partition"], a["isolation"]) for a in lost} == {(1, "read_committed")}
