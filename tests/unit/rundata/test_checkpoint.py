"""The one reader of Spark checkpoints (verifier.rundata.checkpoint), on checkpoints
written by hand the way Spark 3.5/4.0 writes them (``v1``, metadata, one source)."""

from __future__ import annotations

import json
import os

import pytest

from verifier.rundata.checkpoint import (
    PlannedBatch,
    batch_in_flight,
    commit_log_batches,
    committed_end_offsets,
    is_committed,
    offset_log_batches,
    planned_batches,
    planned_end_offsets,
    planned_times,
    uncommitted_batches,
)
from verifier.rundata.errors import UsageError


def _checkpoint(tmp_path, planned: dict[int, dict], committed: list[int], stamp=None):
    ckpt = tmp_path / "ckpt"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    for batch, offsets in planned.items():
        meta = {"batchWatermarkMs": 0, **({"batchTimestampMs": stamp + batch} if stamp else {})}
        (ckpt / "offsets" / str(batch)).write_text(
            "v1\n" + json.dumps(meta) + "\n" + json.dumps(offsets))
        (ckpt / "offsets" / f".{batch}.crc").write_text("x")  # Hadoop checksum files
    for batch in committed:
        (ckpt / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return ckpt


def test_planned_and_committed_batches(tmp_path):
    ckpt = _checkpoint(tmp_path, {0: {"t": {"0": 5, "1": 3}}, 1: {"t": {"0": 9, "1": 3}}}, [0])
    assert offset_log_batches(ckpt) == [0, 1]
    assert commit_log_batches(ckpt) == [0]
    assert is_committed(ckpt, 0) and not is_committed(ckpt, 1)
    assert planned_end_offsets(ckpt, 1) == {("t", 0): 9, ("t", 1): 3}
    assert uncommitted_batches(ckpt) == [1]
    assert batch_in_flight(ckpt)
    assert committed_end_offsets(ckpt) == {("t", 0): 5, ("t", 1): 3}
    assert sorted(b for b, _t in planned_times(ckpt)) == [0, 1]


def test_no_checkpoint_yet_reads_as_empty(tmp_path):
    gone = tmp_path / "none"
    assert offset_log_batches(gone) == commit_log_batches(gone) == []
    assert planned_batches(gone) == [] and planned_times(gone) == []
    assert not batch_in_flight(gone)
    assert committed_end_offsets(gone) == {}


def test_every_batch_committed_is_not_in_flight(tmp_path):
    ckpt = _checkpoint(tmp_path, {0: {"t": {"0": 5}}}, [0])
    assert not batch_in_flight(ckpt) and uncommitted_batches(ckpt) == []


def test_planned_batches_carry_their_times_and_skip_a_torn_entry(tmp_path):
    ckpt = _checkpoint(tmp_path, {0: {"t": {"0": 5}}, 1: {"t": {"0": 9}}}, [0],
                       stamp=1_700_000_000_000)
    (ckpt / "offsets" / "2").write_text('v1\n{"batchTimestampMs": 17')  # a killed driver
    (ckpt / "offsets" / "3").write_text('v1\n{"batchTimestampMs": 1700000000003}')
    commit = (ckpt / "commits" / "0")
    os.utime(commit, ns=(1_700_000_000_500_000_000, 1_700_000_000_500_000_000))
    got = planned_batches(ckpt)
    assert got == [PlannedBatch(0, 1_700_000_000_000, 1_700_000_000_500, {("t", 0): 5}),
                   PlannedBatch(1, 1_700_000_000_001, None, {("t", 0): 9}),
                   PlannedBatch(3, 1_700_000_000_003, None, None)]


def test_a_strict_read_refuses_an_entry_without_its_source(tmp_path):
    ckpt = _checkpoint(tmp_path, {}, [])
    (ckpt / "offsets" / "0").write_text('v1\n{"batchTimestampMs": 1}')
    with pytest.raises(UsageError, match="not a version 1 offsets log entry"):
        planned_end_offsets(ckpt, 0)
    with pytest.raises(OSError):
        planned_end_offsets(ckpt, 7)
