"""The live checks fed recorded micro-batches: every kind they decide and its near misses,
across batch boundaries, after a restart from the persisted state, and against the batch
pass on the same rows (one definition, two paths)."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pytest

from verifier.judge.checks.derive import OBS_SCHEMA
from verifier.judge.definitions import frames, kinds
from verifier.judge.definitions.stream import LIVE_KINDS, LiveChecks, Ranges
from verifier.judge.definitions.stream_rest import same_anomaly_key
from verifier.judge.model import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    READ_COMMITTED,
    REORDER,
    Drain,
)  # fmt: skip

RC = READ_COMMITTED
TOPICS = {"p1": "t", "p2": "t2"}
SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
    ("run", pa.string()), ("pid", pa.string()), ("ses", pa.int32()), ("p", pa.int32()),
    ("seq", pa.int64()), ("txn", pa.int64()), ("abort", pa.bool_()), ("ts_send", pa.int64()),
    ("ts_broker", pa.int64()), ("foreign", pa.bool_()), ("error", pa.string()),
])  # fmt: skip


def rec(offset, seq, ses=1, pid="p1", p=0, topic="t", partition=0, txn=None, abort=False,
        run="r1", foreign=False):
    return {"topic": topic, "partition": partition, "offset": offset, "run": run,
            "pid": pid, "ses": ses, "p": p, "seq": seq, "txn": txn, "abort": abort,
            "ts_send": 1000 + offset, "ts_broker": 2000 + offset, "foreign": foreign,
            "error": "bad" if foreign else None}  # fmt: skip


def batch(*rows) -> pa.Table:
    return pa.Table.from_pylist(list(rows), SCHEMA)


def run_seq(*batches, live=None) -> tuple[LiveChecks, list[dict]]:
    live = live or LiveChecks("r1", RC, TOPICS)
    out = []
    for i, b in enumerate(batches):
        out += live.apply(b, i)
    return live, out


def kinds_of(rows) -> list[tuple]:
    return sorted((r["kind"], r["seq"], r["offset"]) for r in rows)


def test_ranges_merge_and_membership():
    r = Ranges()
    for x in (5, 6, 7, 1, 9, 8, 3):
        r.add(x)
    assert r.flat() == [1, 1, 3, 3, 5, 9]
    r.add(2)
    assert r.flat() == [1, 3, 5, 9] and 4 not in r and 9 in r and 0 not in r
    r.add(0, 20)
    assert r.flat() == [0, 20] and len(r) == 1


def test_clean_stream_over_many_batches_holds_one_range_per_session():
    b = [batch(*[rec(o, o) for o in range(i * 100, (i + 1) * 100)]) for i in range(50)]
    live, out = run_seq(*b)
    assert out == []
    assert live.ranges() == 1
    assert live.records == {"p1": 5000} and live.rows == 5000


def test_same_session_duplicate_across_a_batch_boundary_reported_once():
    live, out = run_seq(batch(rec(0, 0), rec(1, 1), rec(2, 2)),
                        batch(rec(3, 2), rec(4, 3)), batch(rec(5, 2)))
    assert kinds_of(out) == [(DUP_SAME, 2, 3)]
    assert live.counts == {"p1": {DUP_SAME: 1}}


def test_cross_session_resend_and_its_near_miss():
    # session 2 re-sends 3 and 4 (written before) and 5 (never written): only 3 and 4
    # are duplicates, and the first copy of 5 in session 2 is no reorder
    _, out = run_seq(batch(*[rec(o, o) for o in range(5)]),
                     batch(rec(5, 3, ses=2), rec(6, 4, ses=2), rec(7, 5, ses=2)))
    assert kinds_of(out) == [(DUP_CROSS, 3, 5), (DUP_CROSS, 4, 6)]


def test_both_duplicate_kinds_on_one_identity():
    _, out = run_seq(batch(rec(0, 0), rec(1, 0, ses=2)), batch(rec(2, 0, ses=2)))
    assert kinds_of(out) == [(DUP_CROSS, 0, 1), (DUP_SAME, 0, 2)]


def test_reorder_across_batches_and_the_other_session_near_miss():
    _, out = run_seq(batch(rec(0, 0), rec(1, 2)), batch(rec(2, 1)))
    assert kinds_of(out) == [(REORDER, 1, 2)]
    assert out[0]["offsets"] == [1, 2]
    # a lower sequence in a new session (a re-send after a restart) is not a reorder
    _, out = run_seq(batch(rec(0, 0), rec(1, 2)), batch(rec(2, 1, ses=2)))
    assert out == []


def test_naive_replay_is_a_delivery_duplicate_not_a_log_duplicate():
    b = batch(rec(0, 0), rec(1, 1))
    live, out = run_seq(b, b, b)
    assert kinds_of(out) == [(DUP_DELIVERY, 0, 0), (DUP_DELIVERY, 1, 1)]
    assert live.rows == 6 and live.records == {"p1": 2}


def test_aborted_by_intent_and_its_near_miss():
    _, out = run_seq(batch(rec(0, 0, txn=1), rec(1, 1, txn=1)),
                     batch(rec(3, 2, txn=2, abort=True), rec(4, 3, txn=2, abort=True)))
    assert kinds_of(out) == [(ABORTED_READ, 2, 3), (ABORTED_READ, 3, 4)]


def test_foreign_records_of_every_sort_and_an_interleaved_producer():
    _, out = run_seq(batch(rec(0, 0), rec(1, None, foreign=True), rec(2, 1, run="other"),
                           rec(3, 7, pid="nobody"), rec(4, 2, p=1), rec(5, 1)))
    assert [(r["kind"], r["offset"]) for r in out] == [(FOREIGN, o) for o in (1, 2, 3, 4)]
    assert "another partition" in out[-1]["evidence"]
    # another producer's records interleaved in the same partition: nothing
    live = LiveChecks("r1", RC, {"p1": "t", "p3": "t"})
    _, out = run_seq(batch(rec(0, 0), rec(1, 0, pid="p3"), rec(2, 1), rec(3, 1, pid="p3")),
                     live=live)
    assert out == []


def test_restart_from_persisted_state_continues_without_double_counting():
    batches = [batch(rec(0, 0), rec(1, 2)), batch(rec(2, 1), rec(3, 2)),
               batch(rec(4, 3, ses=2), rec(5, 2, ses=2)), batch(rec(6, 4, ses=2))]
    straight, expected = run_seq(*batches)
    first, out = run_seq(*batches[:2])
    saved = json.loads(json.dumps(first.to_json()))
    again = LiveChecks.from_json(saved, "state.json")
    for i, b in enumerate(batches[2:], start=2):
        out += again.apply(b, i)
    assert out == expected and again.counts == straight.counts
    assert again.to_json() == straight.to_json()


def test_state_of_another_format_is_refused():
    with pytest.raises(Exception, match="live-state"):
        LiveChecks.from_json({"format": "verdict", "version": 1}, "x.json")


# -- the same rows through the batch pass: the same anomalies ---------------------------


def _batch_pass(rows: list[dict]) -> list[dict]:
    status = pa.Table.from_pylist(
        [{"pid": "p1", "ses": 1, "txn": 9, "status": "aborted", "abort_intent": True}],
        pa.schema([("pid", pa.string()), ("ses", pa.int32()), ("txn", pa.int64()),
                   ("status", pa.string()), ("abort_intent", pa.bool_())]))  # fmt: skip
    ctx = frames.Ctx(combos=[("spark", RC)], drain=Drain(True), status=status,
                     pids=["p1"], topics={"p1": "t"})  # fmt: skip
    obs = pa.Table.from_pylist(
        [{**{k: r[k] for k in ("topic", "partition", "offset", "pid", "p", "seq", "ses",
                               "txn", "ts_send")}, "ci": 0, "fgn": r["foreign"]}
         for r in rows], OBS_SCHEMA)  # fmt: skip
    seqs = sorted({r["seq"] for r in rows if not r["foreign"] and r["p"] == 0})
    sends = pa.Table.from_pylist(
        [{"topic": "t", "partition": 0, "pid": "p1", "p": 0, "seq": s, "ok": False,
          "info": True, "must_see": False, "t_send": 1, "transactional": False,
          "acked_offset": None} for s in seqs],
        pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("pid", pa.string()),
                   ("p", pa.int32()), ("seq", pa.int64()), ("ok", pa.bool_()),
                   ("info", pa.bool_()), ("must_see", pa.bool_()), ("t_send", pa.int64()),
                   ("transactional", pa.bool_()), ("acked_offset", pa.int64())]))  # fmt: skip
    out = kinds.run_pass(ctx, "t", 0, obs, sends).to_pylist()
    return [r for r in out if r["rec"] == "a" and r["kind"] in LIVE_KINDS]


def test_live_and_batch_find_the_same_anomalies_on_the_same_rows():
    batches = [
        [rec(0, 0), rec(1, 1), rec(2, 3), rec(3, 2)],  # reorder of 2
        [rec(4, 3), rec(5, 4), rec(6, 4)],  # same-session duplicates of 3 and 4
        [rec(7, 1, ses=2), rec(8, 5, ses=2), rec(9, 6, ses=2)],  # a cross-session re-send
        [rec(10, 7, txn=9, abort=True), rec(11, 8, txn=9, abort=True)],
        [rec(12, 9), rec(13, 9, p=1)],  # one misplaced
    ]
    replay = batches[1]  # the naive sink writes batch 1 a second time
    live, out = run_seq(*[batch(*b) for b in [*batches[:2], replay, *batches[2:]]])
    rows = [r for b in [*batches[:2], replay, *batches[2:]] for r in b]
    theirs = Counter(same_anomaly_key({**r, "isolation": r["isolation"]})
                     for r in _batch_pass(rows))
    ours = Counter(same_anomaly_key(r) for r in out)
    assert ours == theirs
    assert {k[0] for k in ours} == {REORDER, DUP_SAME, DUP_CROSS, DUP_DELIVERY,
                                    ABORTED_READ, FOREIGN}


def _random_stream(rng) -> list[list[dict]]:
    """A producer's log as an observer reads it: mostly in order, with retried sends
    (same session copies), reorders, a restart that re-sends (a new session), a few
    records of another partition, cut into batches of random sizes; some batches
    delivered twice (a naive sink's replay)."""
    rows, seq, ses, off = [], 0, 1, 0
    while off < 400:
        x = rng.random()
        if x < 0.05 and seq > 3:
            s = rng.randrange(max(0, seq - 5), seq)  # a copy of a recent record
        elif x < 0.08:
            s = seq + 1  # skip ahead: seq comes later, a reorder
            rows.append(rec(off, s, ses=ses))
            off += 1
            s = seq
            seq += 2
            rows.append(rec(off, s, ses=ses))
            off += 1
            continue
        elif x < 0.10:
            ses += 1  # a restart: the new session re-sends the last few
            seq = max(0, seq - rng.randrange(1, 4))
            continue
        elif x < 0.11:
            rows.append(rec(off, seq, ses=ses, p=1))
            off += 1
            continue
        else:
            s = seq
            seq += 1
        rows.append(rec(off, s, ses=ses, abort=False))
        off += 1
    batches, i = [], 0
    while i < len(rows):
        n = rng.randrange(1, 40)
        batches.append(rows[i:i + n])
        if rng.random() < 0.1:
            batches.append(rows[i:i + n])
        i += n
    return batches


@pytest.mark.parametrize("seed", range(8))
def test_random_streams_live_equals_batch_and_the_arrow_path_equals_row_by_row(seed):
    import random

    batches = _random_stream(random.Random(seed))
    _, fast = run_seq(*[batch(*b) for b in batches])
    slow_live = LiveChecks("r1", RC, TOPICS)
    slow_live._clean = lambda *a: False  # every record through the row-by-row rules
    _, slow = run_seq(*[batch(*b) for b in batches], live=slow_live)
    assert Counter(same_anomaly_key(r) for r in fast) == Counter(
        same_anomaly_key(r) for r in slow)
    theirs = Counter(same_anomaly_key(r) for r in _batch_pass([r for b in batches for r in b]))
    assert Counter(same_anomaly_key(r) for r in fast) == theirs
    assert sum(theirs.values()) > 0


def test_lost_and_unseen_from_the_state_and_the_sends():
    from verifier.judge.definitions.stream_rest import missing
    from verifier.judge.model import LOST, UNSEEN

    live, _ = run_seq(batch(rec(0, 0), rec(1, 1, ses=2), rec(2, 3)))
    sends = pa.Table.from_pylist(
        [{"topic": "t", "pid": "p1", "p": 0, "seq": s, "must_see": m, "t_send": 1,
          "acked_offset": s, "ok": True, "transactional": False}
         for s, m in ((0, True), (1, True), (2, True), (3, True), (4, False))])  # fmt: skip
    # 1 was seen in another session: seen; 4 need not be seen; 2 is missing
    assert [(r["kind"], r["seq"]) for r in missing(live, sends, lambda t, p: False)] == [
        (LOST, 2)]
    assert [(r["kind"], r["seq"]) for r in missing(live, sends, lambda t, p: True)] == [
        (UNSEEN, 2)]
