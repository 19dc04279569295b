"""The drain's conditions, with the brokers' end offsets faked (no Kafka)."""

from __future__ import annotations

import pytest

from streaming.progress import Progress, write_progress
from verifier.orchestration import drain as drain_mod
from verifier.orchestration.drain import DrainIncomplete, drain, drain_to_file, read_drain


@pytest.fixture
def ends(monkeypatch):
    """{isolation: {(topic, partition): end}} the fake brokers report."""
    current = {"read_committed": {("t", 0): 10, ("t", 1): 0},
               "read_uncommitted": {("t", 0): 10, ("t", 1): 0}}
    monkeypatch.setattr(drain_mod, "end_offsets",
                        lambda _bs, _topics, iso, **_kw: dict(current[iso]))
    return current


def _progress(run_dir, isolation, position, written):
    write_progress(run_dir, Progress(isolation, "exactly-once", 1, position, written, 0, 0))


def test_completes_on_position_even_when_the_tail_is_markers(tmp_path, ends):
    for iso in ("read_committed", "read_uncommitted"):
        # offsets 8 and 9 are an aborted record and a marker: never written, yet passed
        _progress(tmp_path, iso, {("t", 0): 10}, {("t", 0): 7})
    result = drain_to_file("bs", ["t"], tmp_path, timeout=2)
    assert result.completed and result.phase == "observed" and result.behind == []
    assert read_drain(tmp_path)["completed"] is True  # t-1 is empty: nothing to pass


def test_open_transaction_names_the_partition(tmp_path, ends):
    ends["read_committed"][("t", 0)] = 4  # LSO held at the open transaction's first offset
    with pytest.raises(DrainIncomplete, match=r"t-0 LSO 4 < HW 10") as info:
        drain_to_file("bs", ["t"], tmp_path, timeout=0.5)
    assert info.value.result.phase == "started"
    written = read_drain(tmp_path)
    assert written["completed"] is False
    assert written["behind"][0]["reason"].startswith("open transaction")


def test_observer_behind_names_query_and_partition(tmp_path, ends):
    _progress(tmp_path, "read_committed", {("t", 0): 10}, {("t", 0): 9})
    _progress(tmp_path, "read_uncommitted", {("t", 0): 6}, {("t", 0): 5})
    with pytest.raises(DrainIncomplete, match=r"t-0 read_uncommitted at 6/10") as info:
        drain("bs", ["t"], tmp_path, timeout=0.5)
    result = info.value.result
    assert result.phase == "stable" and not result.completed
    assert [(b["isolation"], b["partition"]) for b in result.behind] == [("read_uncommitted", 0)]


def test_no_progress_file_means_nothing_observed(tmp_path, ends):
    with pytest.raises(DrainIncomplete, match="read_committed at 0/10"):
        drain("bs", ["t"], tmp_path, timeout=0.3)
