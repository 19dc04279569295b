"""Observation rows, files and progress: pure Python, no JVM."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from streaming.observations import (
    check_format,
    decode_row,
    read_observations,
    write_format_file,
)
from streaming.progress import Progress, read_progress, write_progress
from streaming.sinks import BatchSink, batch_files, rows_in
from verifier.rundata.formats import RunFormatError
from verifier.rundata.records import RecordIdentity, encode_value

RID = RecordIdentity("run-1", "idempotent-0", 2, 1, 7, None, False, 1000)


def test_decode_row_of_own_record():
    row = decode_row("run-1", encode_value(RID, size=200))
    assert row == {"run": "run-1", "pid": "idempotent-0", "ses": 2, "p": 1, "seq": 7,
                   "txn": None, "abort": False, "ts_send": 1000, "foreign": False,
                   "error": None}


@pytest.mark.parametrize("value, reason", [
    (None, "null value"),
    (b"not json", "not JSON"),
    (b"[1,2]", "not a JSON object"),
    (b'{"v":2,"run":"run-1"}', "unknown record format version"),
    (b'{"v":1,"run":"run-1","pid":"x"}', "missing or bad field"),
    (encode_value(RecordIdentity("run-0", "x", 1, 0, 0, None, False, 1)), "another run"),
])
def test_decode_row_flags_foreign(value, reason):
    row = decode_row("run-1", value)
    assert row["foreign"] is True and reason in row["error"]
    assert row["pid"] is None and row["seq"] is None


def test_format_file_is_checked(tmp_path):
    with pytest.raises(RunFormatError, match="missing"):
        check_format(tmp_path)
    write_format_file(tmp_path)
    check_format(tmp_path)
    (tmp_path / "observations" / "_format.json").write_text('{"format":"observations","version":9}')
    with pytest.raises(RunFormatError, match="unknown observations version 9"):
        check_format(tmp_path)


def _checkpoint(tmp_path, planned: dict[int, dict], committed: list[int]):
    ckpt = tmp_path / "ckpt"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    for batch, offsets in planned.items():
        (ckpt / "offsets" / str(batch)).write_text(
            "v1\n" + json.dumps({"batchWatermarkMs": 0}) + "\n" + json.dumps(offsets))
        (ckpt / "offsets" / f".{batch}.crc").write_text("x")  # Hadoop checksum files
    for batch in committed:
        (ckpt / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return ckpt


def test_progress_round_trip(tmp_path):
    assert read_progress(tmp_path, "read_committed") is None
    p = Progress("read_committed", "exactly-once", 3, {("t", 0): 10}, {("t", 0): 7}, 42, 1)
    write_progress(tmp_path, p)
    assert read_progress(tmp_path, "read_committed") == p


class _FakeBatch:
    """Stands in for a Spark batch of raw Kafka rows (streaming.decode.raw_rows): the
    sink only calls toArrow()."""

    def __init__(self, offsets: list[int]):
        self.offsets = offsets

    def toArrow(self) -> pa.Table:  # noqa: N802 - Spark's name
        n = len(self.offsets)
        return pa.table({"topic": pa.array(["t"] * n, pa.string()),
                         "partition": pa.array([0] * n, pa.int32()),
                         "offset": pa.array(self.offsets, pa.int64()),
                         "ts_broker": pa.array([0] * n, pa.int64()),
                         "value": pa.array([encode_value(RID)] * n, pa.binary())})


@pytest.mark.parametrize("mode, files_after_replay, rows_after_replay", [
    ("exactly-once", 1, 3),  # the replay replaced the file
    ("at-least-once", 2, 6),  # the replay appended a second copy
])
def test_sink_replay(tmp_path, mode, files_after_replay, rows_after_replay):
    write_format_file(tmp_path)
    ckpt = _checkpoint(tmp_path, {0: {"t": {"0": 4}}}, [])
    sink = BatchSink(tmp_path, "read_committed", ckpt, mode, "run-1")
    sink(_FakeBatch([0, 1, 3]), 0)  # offset 2 is a transaction marker
    sink(_FakeBatch([0, 1, 3]), 0)  # Spark re-runs the uncommitted batch 0
    files = batch_files(tmp_path, "read_committed", 0)
    assert len(files) == files_after_replay and rows_in(files) == rows_after_replay
    rows = read_observations(tmp_path, "spark", "read_committed")
    assert rows.num_rows == rows_after_replay and set(rows["batch"].to_pylist()) == {0}
    progress = read_progress(tmp_path, "read_committed")
    # position (4) passes the marker; the highest offset written (3) never can
    assert progress.position == {("t", 0): 4} and progress.written == {("t", 0): 3}


def test_empty_batch_moves_position_without_a_file(tmp_path):
    write_format_file(tmp_path)
    ckpt = _checkpoint(tmp_path, {5: {"t": {"0": 12}}}, [])
    BatchSink(tmp_path, "read_uncommitted", ckpt, "exactly-once", "run-1",
              written={("t", 0): 10})(_FakeBatch([]), 5)
    assert batch_files(tmp_path, "read_uncommitted", 5) == []
    progress = read_progress(tmp_path, "read_uncommitted")
    assert progress.position == {("t", 0): 12} and progress.written == {("t", 0): 10}
