"""What the live path decides after the drain besides lost: torn transactions from the
final states, hanging partitions from drain.json, inconsistent offsets between the two
levels as their rows arrive; each with its near-misses."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge.definitions.stream import LiveChecks
from verifier.judge.definitions.stream_rest import (
    OffsetComparator,
    hanging_rows,
    torn_rows,
)  # fmt: skip
from verifier.judge.model import HANGING, INCONSISTENT, TORN

RUN, PID, TOPIC = "r1", "tx-0", "t.tx"
RC, RU = "read_committed", "read_uncommitted"


def _live(iso: str, held: dict[int, list[tuple[int, int]]]) -> LiveChecks:
    """A state holding, per session, the (partition, seq) listed."""
    live = LiveChecks(RUN, iso, {PID: TOPIC})
    rows = []
    off: dict[int, int] = {}
    for ses, recs in held.items():
        for p, seq in recs:
            off[p] = off.get(p, -1) + 1
            rows.append({"topic": TOPIC, "partition": p, "offset": off[p], "run": RUN,
                         "pid": PID, "ses": ses, "p": p, "seq": seq, "txn": 1, "abort": False,
                         "ts_send": 1, "ts_broker": 1, "foreign": False, "error": None})
    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                        ("offset", pa.int64()), ("run", pa.string()), ("pid", pa.string()),
                        ("ses", pa.int32()), ("p", pa.int32()), ("seq", pa.int64()),
                        ("txn", pa.int64()), ("abort", pa.bool_()), ("ts_send", pa.int64()),
                        ("ts_broker", pa.int64()), ("foreign", pa.bool_()),
                        ("error", pa.string())])  # fmt: skip
    live.apply(pa.Table.from_pylist(rows, schema), 0)
    return live


SIZES = pa.Table.from_pylist([{"pid": PID, "ses": 1, "txn": 1, "size": 3, "t": 5,
                               "partitions": [0, 1]}])  # fmt: skip
RECORDS = pa.Table.from_pylist([{"pid": PID, "ses": 1, "txn": 1, "p": p, "seq": s}
                                for p, s in ((0, 0), (0, 1), (1, 0))])  # fmt: skip


def _torn(rc: dict, ru: dict) -> list[tuple]:
    rows = torn_rows({RC: _live(RC, rc), RU: _live(RU, ru)}, SIZES, RECORDS, {PID: TOPIC})
    return [(r["kind"], r["isolation"], r["evidence"]) for r in rows]


def test_a_committed_transaction_seen_in_part_is_torn_at_that_level():
    all3 = {1: [(0, 0), (0, 1), (1, 0)]}
    assert _torn(all3, all3) == []  # all seen: not torn
    assert _torn({}, all3) == []  # none seen at read_committed: lost, not torn
    got = _torn({1: [(0, 0), (1, 0)]}, all3)
    assert got == [(TORN, RC, '{"records":3,"visible":2,"partitions":[0,1]}')]


def test_a_record_seen_only_in_another_session_is_not_part_of_the_transaction():
    # (0, 1) was written by session 2 (a re-send): session 1's transaction is torn
    got = _torn({1: [(0, 0), (1, 0)], 2: [(0, 1)]}, {1: [(0, 0), (0, 1), (1, 0)]})
    assert [g[:2] for g in got] == [(TORN, RC)]


def test_hanging_only_where_the_lso_stays_below_the_high_watermark():
    parts = [{"topic": "a", "partition": 0, "end_read_committed": 10, "end_read_uncommitted": 10},
             {"topic": "a", "partition": 1, "end_read_committed": 7, "end_read_uncommitted": 9}]
    rows = hanging_rows(parts)
    assert [(r["kind"], r["partition"], r["offsets"]) for r in rows] == [(HANGING, 1, [7, 9])]


OBS = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                 ("run", pa.string()), ("pid", pa.string()), ("p", pa.int32()),
                 ("seq", pa.int64()), ("ses", pa.int32()), ("txn", pa.int64()),
                 ("ts_send", pa.int64()), ("foreign", pa.bool_())])  # fmt: skip


def _obs(*recs) -> pa.Table:
    """(offset, seq) pairs, or (offset, seq, ses) / (offset, None) for undecodable bytes."""
    rows = []
    for r in recs:
        off, seq, ses = (*r, 1) if len(r) == 2 else r
        rows.append({"topic": TOPIC, "partition": 0, "offset": off, "run": RUN, "pid": PID,
                     "p": 0, "seq": seq, "ses": ses, "txn": None, "ts_send": 1,
                     "foreign": seq is None})
    return pa.Table.from_pylist(rows, OBS)


def test_the_same_records_at_both_levels_in_any_interleaving_are_consistent():
    c = OffsetComparator(RUN, [PID])
    assert c.apply(RU, _obs((0, 0), (1, 1))) == []
    assert c.apply(RC, _obs((0, 0))) == []
    assert c.apply(RC, _obs((1, 1), (2, 2))) == []
    assert c.apply(RU, _obs((2, 2), (3, 3))) == []
    assert c.waiting() == 1  # offset 3, until read_committed passes it


def test_an_offset_one_level_never_delivers_is_no_inconsistency():
    c = OffsetComparator(RUN, [PID])
    c.apply(RU, _obs((0, 0), (1, 1), (2, 2)))  # 1: an aborted record
    assert c.apply(RC, _obs((0, 0), (2, 2))) == [] and c.waiting() == 0


def test_different_records_or_undecodable_bytes_at_one_offset_are_inconsistent():
    c = OffsetComparator(RUN, [PID])
    c.apply(RC, _obs((0, 0), (1, 1), (2, 2, 1)))
    found = c.apply(RU, _obs((0, 0), (1, None), (2, 2, 2)))  # bytes; another session
    assert [(r["kind"], r["offset"]) for r in found] == [(INCONSISTENT, 1), (INCONSISTENT, 2)]
    assert '"foreign_seen":true' in found[0]["evidence"]
    assert '"spark/read_committed":"tx-0:0:2 ses 1 txn None sent 1"' in found[1]["evidence"]


def test_a_replayed_batch_is_not_compared_again():
    c = OffsetComparator(RUN, [PID])
    c.apply(RC, _obs((0, 0), (1, 1)))
    c.apply(RU, _obs((0, 0), (1, 1)))
    assert c.apply(RU, _obs((0, 0), (1, 1))) == [] and c.waiting() == 0
