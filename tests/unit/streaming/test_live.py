"""The live checks beside the sink: their state follows the sink's semantics across an
observer restart (files on disk, no Spark): no double counting after an exactly-once
replay, delivery duplicates after a naive one, catch-up after a kill between the
observation file and the state."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from streaming.live import LiveSink, final, read_summary
from streaming.observations import SCHEMA, output_dir, write_table_atomic
from verifier.judge.model import DUP_DELIVERY, DUP_SAME, REORDER

RC = "read_committed"
TOPICS = {"p1": "t"}


def rows(batch: int, *pairs) -> pa.Table:
    return pa.Table.from_pylist([
        {"reader": "spark", "isolation": RC, "topic": "t", "partition": 0, "offset": o,
         "run": "r1", "pid": "p1", "ses": 1, "p": 0, "seq": q, "txn": None, "abort": False,
         "ts_send": 1, "ts_broker": 2, "batch": batch, "observed_at": 3, "foreign": False,
         "error": None} for o, q in pairs], SCHEMA)  # fmt: skip


BATCHES = [rows(0, (0, 0), (1, 2)), rows(1, (2, 1), (3, 3)), rows(2, (4, 3), (5, 4))]


def write(run_dir, batch: int, table: pa.Table, suffix: str = "") -> str:
    name = f"batch-{batch:010d}{suffix}.parquet"
    write_table_atomic(table, output_dir(run_dir, "spark", RC) / name)
    return name


def sink(run_dir, mode: str) -> LiveSink:
    return LiveSink(run_dir, RC, mode, "r1", TOPICS)


def keys(table: pa.Table) -> Counter:
    return Counter((r["kind"], r["offset"]) for r in table.to_pylist())


def test_exactly_once_replay_after_a_restart_counts_once(tmp_path):
    first = sink(tmp_path, "exactly-once")
    for b, t in enumerate(BATCHES):
        first(t, b, write(tmp_path, b, t))
    before = read_summary(tmp_path, RC)
    # killed before Spark committed batch 2: a new process re-runs it, same id and range
    again = sink(tmp_path, "exactly-once")
    again(BATCHES[2], 2, write(tmp_path, 2, BATCHES[2]))
    after = read_summary(tmp_path, RC)
    assert after["anomalies"] == before["anomalies"] == {"p1": {REORDER: 1, DUP_SAME: 1}}
    assert after["records"] == {"p1": 5} and after["rows"] == 6
    _, found = final(tmp_path, RC, "exactly-once", "r1", TOPICS)
    assert keys(found) == Counter({(REORDER, 2): 1, (DUP_SAME, 4): 1})


def test_naive_replay_after_a_kill_before_the_state_is_delivery_duplicates(tmp_path):
    first = sink(tmp_path, "at-least-once")
    first(BATCHES[0], 0, write(tmp_path, 0, BATCHES[0], "-aaaa"))
    write(tmp_path, 1, BATCHES[1], "-bbbb")  # written, then killed before its state
    again = sink(tmp_path, "at-least-once")
    again(BATCHES[1], 1, write(tmp_path, 1, BATCHES[1], "-cccc"))
    again(BATCHES[2], 2, write(tmp_path, 2, BATCHES[2], "-dddd"))
    _, found = final(tmp_path, RC, "at-least-once", "r1", TOPICS)
    assert keys(found) == Counter({(REORDER, 2): 1, (DUP_SAME, 4): 1, (DUP_DELIVERY, 2): 1,
                                   (DUP_DELIVERY, 3): 1})  # fmt: skip
    summary = read_summary(tmp_path, RC)
    assert summary["anomalies"]["p1"][DUP_DELIVERY] == 2 and summary["rows"] == 8


def test_final_adds_the_files_written_after_the_last_state(tmp_path):
    s = sink(tmp_path, "exactly-once")
    s(BATCHES[0], 0, write(tmp_path, 0, BATCHES[0]))
    write(tmp_path, 1, BATCHES[1])  # the observer stopped before judging it
    live, found = final(tmp_path, RC, "exactly-once", "r1", TOPICS)
    assert keys(found) == Counter({(REORDER, 2): 1}) and live.batch == 1


def test_no_state_means_no_live_result(tmp_path):
    write(tmp_path, 0, BATCHES[0])
    assert final(tmp_path, RC, "exactly-once", "r1", TOPICS) is None


def test_observation_files_come_in_the_order_they_were_written(tmp_path):
    """By batch id; the files a naive replay wrote for one batch by write time (their
    random suffixes sort any way)."""
    import os

    from streaming.live import observation_files

    folder = output_dir(tmp_path, "spark", RC)
    folder.mkdir(parents=True)
    names = ["batch-0000000002.parquet", "batch-0000000010-ffff0000.parquet",
             "batch-0000000010-0000aaaa.parquet", "batch-0000000001.parquet"]
    for n, name in enumerate(names):
        (folder / name).write_bytes(b"")
        os.utime(folder / name, ns=(n * 10**9, n * 10**9))  # written in list order
    assert [p.name for p in observation_files(tmp_path, RC)] == [
        "batch-0000000001.parquet", "batch-0000000002.parquet",
        "batch-0000000010-ffff0000.parquet", "batch-0000000010-0000aaaa.parquet"]
    assert observation_files(tmp_path / "none", RC) == []
