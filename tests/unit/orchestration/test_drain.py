"""The drain: its decision, pure (per partition; progress against stall; the cap), and its
loop with the brokers' end offsets faked (no Kafka) and the observer's progress files
written by the test."""

from __future__ import annotations

import threading
import time

import orjson
import pytest

from streaming.progress import Progress, write_progress
from verifier.judge.checks.load import load_drain
from verifier.judge.model import OBSERVER
from verifier.orchestration import drain as drain_mod
from verifier.orchestration.drain import (
    DrainIncomplete,
    Movement,
    behind,
    decide,
    drain,
    drain_to_file,
    marks_of,
    read_drain,
    stall_for,
)  # fmt: skip
from verifier.rundata.formats import RunFormatError
from verifier.rundata.layout import layout

RC, RU = "read_committed", "read_uncommitted"
ISOS = (RC, RU)


# -- the decision, pure -------------------------------------------------------------------


def test_a_partition_with_an_open_transaction_holds_back_only_itself():
    """t-0 has an open transaction (LSO 4 < HW 10); t-1 is stable and read at both levels.
    The observer is compared on every partition at its level's end: at read_committed
    t-0's end is the LSO, which it reached; at read_uncommitted the high watermark."""
    ends = {RC: {("t", 0): 4, ("t", 1): 7}, RU: {("t", 0): 10, ("t", 1): 7}}
    pos = {RC: {("t", 0): 4, ("t", 1): 7}, RU: {("t", 0): 10, ("t", 1): 7}}
    assert [(b["partition"], b["reason"]) for b in behind(ends, pos, ISOS)] == [
        (0, "open transaction (LSO < high watermark)")]
    pos[RU][("t", 0)] = 6
    got = behind(ends, pos, ISOS)
    assert [(b["partition"], b.get("isolation")) for b in got] == [(0, None), (0, RU)]
    assert got[1]["observer_position"] == 6 and got[1]["end_offset"] == 10


def test_a_partition_never_read_is_behind_from_offset_zero():
    ends = {RC: {("t", 0): 3}, RU: {("t", 0): 3}}
    got = behind(ends, {RC: {}, RU: {("t", 0): 3}}, ISOS)
    assert [(b["isolation"], b["observer_position"]) for b in got] == [(RC, 0)]


def test_decide_waits_until_the_deadline_then_only_while_something_behind_moves():
    late = [{"topic": "t", "partition": 0, "isolation": RC, "reason": "observer behind",
             "observer_position": 5, "end_offset": 9}]
    m = Movement()
    m.look(0.0, {f"observer/{RC}": "a", "lso/t-0": 9})
    args = {"deadline_s": 10.0, "stall_s": 4.0, "cap_s": 30.0}
    assert decide([], m, 0.0, **args) == "complete"
    assert decide(late, m, 5.0, **args) == "wait"  # before the deadline: wait anyway
    assert decide(late, m, 10.0, **args) == "stalled"  # nothing moved for 10 s
    m.look(9.0, {f"observer/{RC}": "b", "lso/t-0": 9})  # the query moved at 9 s
    assert decide(late, m, 12.0, **args) == "wait"
    assert decide(late, m, 13.0, **args) == "stalled"  # 4 s without a move
    m.look(29.5, {f"observer/{RC}": "c", "lso/t-0": 9})
    assert decide(late, m, 30.0, **args) == "cap"  # still moving, but at the cap
    # the LSO moving does not extend a query that stalled, nor the reverse
    m.look(40.0, {f"observer/{RC}": "c", "lso/t-0": 12})
    assert decide(late, m, 41.0, deadline_s=10.0, stall_s=4.0, cap_s=100.0) == "stalled"
    txn = [{"topic": "t", "partition": 0, "reason": "open transaction (LSO < high watermark)",
            "read_committed_end": 12, "read_uncommitted_end": 20}]
    assert decide(txn, m, 41.0, deadline_s=10.0, stall_s=4.0, cap_s=100.0) == "wait"


def test_a_query_moves_when_it_plans_or_writes_a_batch_not_only_when_positions_move():
    ends = {RC: {("t", 0): 9}, RU: {("t", 0): 9}}
    pos = {RC: {("t", 0): 5}, RU: {("t", 0): 9}}
    m = Movement()
    m.look(0.0, marks_of(ends, pos, {RC: (3, (2, 100)), RU: (3, (3, 120))}))
    m.look(6.0, marks_of(ends, pos, {RC: (4, (2, 100)), RU: (3, (3, 120))}))  # planned 4
    assert m.quiet_for(f"observer/{RC}", 7.0) == 1.0
    assert m.quiet_for(f"observer/{RU}", 7.0) == 7.0
    assert m.quiet_for("lso/t-0", 7.0) == 7.0


def test_stall_window_is_half_the_deadline_at_least_twenty_seconds_at_most_the_deadline():
    assert stall_for(120) == 60 and stall_for(30) == 20 and stall_for(8) == 8


# -- drain.json: the judge's reading of both formats -----------------------------------


def _v2(tmp_path, behind_entries: list[dict]):
    doc = {"format": "drain", "version": 2, "completed": False, "ended": "stalled",
           "deadline_s": 10, "cap_s": 30, "stall_s": 5, "elapsed_s": 15, "extended_s": 5,
           "end_offsets": {RC: {"a-0": 4, "b-0": 7}, RU: {"a-0": 10, "b-0": 7}},
           "observer_positions": {RC: {"a-0": 4, "b-0": 7}, RU: {"a-0": 10, "b-0": 7}},
           "readers_moved_at": {}, "behind": behind_entries}
    (tmp_path / "drain.json").write_bytes(orjson.dumps(doc))
    return load_drain(tmp_path / "drain.json")


OPEN_A = {"topic": "a", "partition": 0, "reason": "open transaction (LSO < high watermark)",
          "read_committed_end": 4, "read_uncommitted_end": 10, "stalled_s": 15}


def test_a_hanging_transaction_leaves_the_other_partitions_complete(tmp_path):
    d = _v2(tmp_path, [OPEN_A])
    assert d.incomplete("a", 0, OBSERVER, RC) and d.incomplete("a", 0, "plain", RC)
    assert not d.incomplete("a", 0, OBSERVER, RU)  # read to its high watermark
    assert not d.incomplete("b", 0, OBSERVER, RC) and not d.incomplete("b", 0, OBSERVER, RU)
    assert d.incomplete_where({"b"}, ISOS, {OBSERVER}) == []
    assert d.incomplete_where({"a"}, ISOS, {OBSERVER}) == ["a-0 read_committed (open transaction)"]


def test_a_stalled_reader_is_named_with_the_offsets_it_stopped_at(tmp_path):
    stuck = {"topic": "b", "partition": 0, "isolation": RU, "reason": "observer behind",
             "observer_position": 3, "end_offset": 7, "stalled_s": 6}
    d = _v2(tmp_path, [OPEN_A, stuck])
    assert d.incomplete("b", 0, OBSERVER, RU) and not d.incomplete("b", 0, OBSERVER, RC)
    assert d.incomplete_where({"b"}, ISOS, {OBSERVER}) == [
        "b-0 read_uncommitted for reader spark (stopped at 3/7)"]


def test_format_1_is_still_read_with_its_meaning(tmp_path):
    """Format 1 compared the observer only once no transaction was open anywhere."""
    doc = {"format": "drain", "version": 1, "completed": False, "phase": "started",
           "deadline_s": 120, "elapsed_s": 120, "end_offsets": {RC: {"a-0": 4}, RU: {"a-0": 9}},
           "observer_positions": {}, "behind": [OPEN_A]}
    (tmp_path / "drain.json").write_bytes(orjson.dumps(doc))
    d = load_drain(tmp_path / "drain.json")
    assert d.incomplete("b", 0, OBSERVER, RU)
    assert any("every partition for reader spark" in x
               for x in d.incomplete_where({"b"}, ISOS, {OBSERVER}))
    (tmp_path / "drain.json").write_bytes(orjson.dumps({**doc, "version": 3}))
    with pytest.raises(RunFormatError, match="unknown drain version 3"):
        load_drain(tmp_path / "drain.json")


# -- the loop, the brokers faked ------------------------------------------------------------


@pytest.fixture
def ends(monkeypatch):
    """{isolation: {(topic, partition): end}} the fake brokers report."""
    current = {RC: {("t", 0): 10, ("t", 1): 0}, RU: {("t", 0): 10, ("t", 1): 0}}
    monkeypatch.setattr(drain_mod, "end_offsets",
                        lambda _bs, _topics, iso, **_kw: dict(current[iso]))
    monkeypatch.setattr(drain_mod, "log_start_offsets",  # nothing deleted
                        lambda _bs, _topics, **_kw: {("t", 0): 0, ("t", 1): 0})
    return current


def _progress(run_dir, isolation, position, written, batch=1):
    write_progress(run_dir, Progress(isolation, "exactly-once", batch, position, written, 0, 0))


def test_completes_on_position_even_when_the_tail_is_markers(tmp_path, ends):
    for iso in ISOS:
        # offsets 8 and 9 are an aborted record and a marker: never written, yet passed
        _progress(tmp_path, iso, {("t", 0): 10}, {("t", 0): 7})
    result = drain_to_file("bs", ["t"], tmp_path, timeout=2)
    assert result.completed and result.ended == "complete" and result.behind == []
    written = read_drain(tmp_path)
    assert written["completed"] is True and written["version"] == 2  # t-1 empty: nothing to pass
    assert written["extended_s"] == 0


def test_open_transaction_names_the_partition_and_the_observer_is_compared(tmp_path, ends):
    ends[RC][("t", 0)] = 4  # LSO held at the open transaction's first offset
    for iso, at in ((RC, 4), (RU, 10)):
        _progress(tmp_path, iso, {("t", 0): at}, {("t", 0): at - 1})
    with pytest.raises(DrainIncomplete, match=r"t-0 LSO 4 < HW 10") as info:
        drain_to_file("bs", ["t"], tmp_path, timeout=0.5)
    assert info.value.result.ended == "stalled"
    written = read_drain(tmp_path)
    assert written["completed"] is False
    assert [b["reason"] for b in written["behind"]] == ["open transaction (LSO < high watermark)"]
    assert written["behind"][0]["stalled_s"] >= 0.5


def test_observer_behind_names_query_and_partition(tmp_path, ends):
    _progress(tmp_path, RC, {("t", 0): 10}, {("t", 0): 9})
    _progress(tmp_path, RU, {("t", 0): 6}, {("t", 0): 5})
    with pytest.raises(DrainIncomplete, match=r"t-0 read_uncommitted at 6/10") as info:
        drain("bs", ["t"], tmp_path, timeout=0.5)
    result = info.value.result
    assert not result.completed and result.ended == "stalled"
    assert [(b["isolation"], b["partition"]) for b in result.behind] == [(RU, 0)]


def test_no_progress_file_means_nothing_observed(tmp_path, ends):
    with pytest.raises(DrainIncomplete, match="read_committed at 0/10"):
        drain("bs", ["t"], tmp_path, timeout=0.3)


def _reader(run_dir, stop: threading.Event, until: int, every: float = 0.1) -> None:
    """An observer that reads one offset a batch at both levels, every ``every`` seconds."""
    at = 0
    while not stop.is_set() and at < until:
        at += 1
        for iso in ISOS:
            _progress(run_dir, iso, {("t", 0): at}, {("t", 0): at - 1}, batch=at)
        time.sleep(every)


def test_the_deadline_extends_while_the_observer_advances(tmp_path, ends):
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(tmp_path, stop, 10))
    reader.start()
    try:
        result = drain_to_file("bs", ["t"], tmp_path, timeout=0.3, stall_s=1.0,
                               cap_factor=20, interval=0.05)
    finally:
        stop.set()
        reader.join()
    assert result.completed and result.elapsed_s > 0.6 and result.extended_s > 0
    assert read_drain(tmp_path)["readers_moved_at"][f"observer/{RC}"] > 0.3


def test_a_reader_that_stops_advancing_ends_the_drain_where_it_stopped(tmp_path, ends):
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(tmp_path, stop, 4))
    reader.start()
    try:
        with pytest.raises(DrainIncomplete, match=r"nothing behind moved") as info:
            drain("bs", ["t"], tmp_path, timeout=0.2, stall_s=0.4, cap_factor=50,
                  interval=0.05)
    finally:
        stop.set()
        reader.join()
    result = info.value.result
    assert result.ended == "stalled" and result.elapsed_s < 5
    assert {(b["isolation"], b["observer_position"]) for b in result.behind} == {(RC, 4),
                                                                                (RU, 4)}
    assert all(b["stalled_s"] >= 0.4 for b in result.behind)


def test_the_cap_ends_a_drain_that_keeps_moving(tmp_path, ends):
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(tmp_path, stop, 10_000, 0.05))
    ends[RC][("t", 0)] = ends[RU][("t", 0)] = 100_000
    reader.start()
    try:
        with pytest.raises(DrainIncomplete, match=r"still moving at the cap") as info:
            drain("bs", ["t"], tmp_path, timeout=0.2, stall_s=0.5, cap_factor=3,
                  interval=0.05)
    finally:
        stop.set()
        reader.join()
    assert info.value.result.ended == "cap"
    assert 0.6 <= info.value.result.elapsed_s < 3
    assert layout(tmp_path).drain.exists() is False  # drain() alone writes nothing
