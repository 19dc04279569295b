"""Every anomaly where its record was read, with the identity it names (issue 22)."""

from __future__ import annotations

from tests.unit.judge.builders import ALL, RunBuilder


def test_record_in_a_partition_it_does_not_name_is_foreign_there_and_missing_at_home(engine):
    b = RunBuilder(engine, mode="idempotent")
    b.write(0, 0, 0).write(0, 1, 1)
    b.send(1, 0, offset=0).see(1, 0, 2, at=("t", 0))  # p 1's record, read in partition 0
    b.write(0, 2, 3).write(1, 1, 1)
    found = {}
    for name in ("foreign-record", "lost", "reorder", "duplicate-log"):
        found.update(b.check(name))
    assert set(found) == {"foreign-record", "lost"}, found  # no reorder in partition 0
    f = found["foreign-record"]
    assert {(a["topic"], a["partition"], a["offset"], a["reader"], a["isolation"])
            for a in f} == {("t", 0, 2, r, i) for r, i in ALL}  # fmt: skip
    assert f[0]["evidence"]["names"] == {"pid": "p1", "p": 1, "seq": 0, "ses": 1}
    assert f[0]["evidence"]["home"] == {"topic": "t", "partition": 1}
    lost = found["lost"]
    assert {(a["partition"], a["seq"], a["offset"]) for a in lost} == {(1, 0, 0)}


def test_record_in_another_producers_topic_is_foreign_where_read(engine):
    b = RunBuilder(engine, mode="at-least-once").producer("q1", "at-least-once", "u")
    b.write(0, 0, 0).write(0, 0, 0, pid="q1")
    b.send(0, 1, offset=1).see(0, 1, 1, at=("u", 0))  # p1's record in q1's topic
    found = b.check("foreign-record")
    assert {(a["topic"], a["partition"], a["offset"]) for a in found["foreign-record"]} == {
        ("u", 0, 1)}


def test_unsent_identity_is_placed_where_read_with_reader_and_level(engine):
    b = RunBuilder(engine)
    b.write(0, 0, 0).see(0, 9, 1, combos=[("plain", "read_committed")])
    f = b.check("foreign-record")["foreign-record"]
    assert [(a["partition"], a["offset"], a["reader"], a["isolation"], a["seq"]) for a in f] == [
        (0, 1, "plain", "read_committed", 9)]
    assert f[0]["evidence"]["error"] == "identity in no producer history"


def test_duplicate_and_reorder_name_the_readers_that_read_them(engine):
    b = RunBuilder(engine, mode="idempotent")
    b.write(0, 0, 0).write(0, 2, 1).write(0, 1, 2)
    b.see(0, 1, 3, combos=[("spark", "read_committed")])
    r = b.check("reorder")["reorder"]
    assert {(a["isolation"], a["reader"], a["offset"]) for a in r} == {
        ("read_committed", "plain,spark", 2), ("read_uncommitted", "plain,spark", 2)}
    d = b.check("duplicate-log")["duplicate-same-session"]
    assert [(a["isolation"], a["reader"], a["offsets"]) for a in d] == [
        ("read_committed", "spark", [2, 3])]


def test_lost_record_is_placed_at_its_acknowledged_offset(engine):
    b = RunBuilder(engine)
    b.write(0, 0, 0).send(0, 1, offset=1).write(0, 2, 2)
    lost = b.check("lost")["lost"]
    assert {(a["partition"], a["offset"]) for a in lost} == {(0, 1)}
    assert lost[0]["evidence"]["acked_offset"] == 1


def test_reader_with_undecodable_bytes_never_got_the_record(engine):
    b = RunBuilder(engine)
    b.write(0, 0, 0).write(0, 2, 2)
    b.send(0, 1, offset=1)
    b.see(0, 1, 1, combos=[c for c in ALL if c != ("plain", "read_committed")])
    b.see(None, None, 1, combos=[("plain", "read_committed")], pid=None, run=None, ses=None,
          at=("t", 0), foreign=True, error="not JSON: garbled")  # fmt: skip
    found = {}
    for name in ("lost", "inconsistent-offset", "foreign-record"):
        found.update(b.check(name))
    assert set(found) == {"lost", "inconsistent-offset", "foreign-record"}
    assert [(a["seq"], a["isolation"], a["reader"], a["evidence"]["in_log"])
            for a in found["lost"]] == [(1, "read_committed", "plain", True)]  # fmt: skip
    i = found["inconsistent-offset"]
    assert [a["offset"] for a in i] == [1]
    assert i[0]["evidence"]["seen"]["plain/read_committed"] == "undecodable"
    assert i[0]["evidence"]["seen"]["spark/read_committed"].startswith("p1:0:1 ")
    assert [(a["offset"], a["reader"]) for a in found["foreign-record"]] == [(1, "plain")]
