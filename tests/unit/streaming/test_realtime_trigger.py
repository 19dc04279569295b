"""Spark's real-time mode (issue 46): the trigger a pipeline's writer asks for, refused
before 4.1 with the reason, and the marker a kill waits for late in a real-time batch."""

from __future__ import annotations

import os

import pytest

from streaming.pipelines.contract import PipelineError
from streaming.pipelines.triggers import (
    KILL_AT,
    batch_began,
    describe,
    duration_ms,
    late_in_batch,
    real_time_marker,
    recording_trigger,
    refuse_real_time,
)
from verifier.rundata.pipelines import read_marker


@pytest.mark.parametrize("text,ms", [("10 seconds", 10_000), ("1 second", 1000),
                                     ("500 ms", 500), ("2 minutes", 120_000),
                                     ("1.5 seconds", 1500), ("interval 5 seconds", 5000),
                                     ("soon", None), ("5 fortnights", None)])
def test_spark_duration_strings(text, ms):
    assert duration_ms(text) == ms


def test_the_trigger_as_the_report_says_it():
    assert describe({"realTime": "10 seconds"}) == {"kind": "real-time", "ms": 10_000,
                                                    "text": "10 seconds"}
    assert describe({"processingTime": "1 second"})["kind"] == "processing-time"
    assert describe({"availableNow": True}) == {"kind": "available-now", "ms": None}
    # no trigger call: Spark's default micro-batch, as soon as the previous one ends
    assert describe({}) == {"kind": "processing-time", "ms": 0, "text": "default"}


@pytest.mark.parametrize("version", ["4.0.0", "3.5.7"])
def test_real_time_before_spark_4_1_is_refused_with_the_reason(version):
    with pytest.raises(PipelineError) as err:
        refuse_real_time("rt.py", version)
    assert "from 4.1" in str(err.value) and f"PySpark {version}" in str(err.value)
    assert "--spark-version 4.2.0" in str(err.value)


@pytest.mark.parametrize("version", ["4.1.0", "4.2.0", "5.0.1"])
def test_real_time_from_spark_4_1_is_let_through(version):
    refuse_real_time("rt.py", version)


def test_the_wrapped_trigger_refuses_before_spark_is_asked():
    """The writer is never touched: the refusal comes before PySpark's own trigger (on
    4.0 a TypeError about an unexpected keyword, with no reason)."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    original = DataStreamWriter.trigger
    with pytest.raises(PipelineError, match="real-time mode"):
        with recording_trigger("rt.py", "4.0.0") as seen:
            DataStreamWriter.trigger(object(), realTime="10 seconds")
    assert seen.calls == [] and DataStreamWriter.trigger is original  # restored


def test_a_real_time_batch_is_late_after_kill_at_of_its_duration():
    assert not late_in_batch(100.0, 100.0 + KILL_AT * 10 - 0.1, 10_000)
    assert late_in_batch(100.0, 100.0 + KILL_AT * 10, 10_000)


def _commit(checkpoint, batch: int, at: float) -> None:
    path = checkpoint / "commits" / str(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n{}\n")
    os.utime(path, (at, at))


def test_the_batch_in_flight_began_at_the_latest_commit_since_the_start(tmp_path):
    cp = tmp_path / "checkpoint"
    assert batch_began(cp, 500.0) is None  # no commit yet: its first batch, a replay too
    _commit(cp, 0, 400.0)  # a commit of the killed predecessor
    assert batch_began(cp, 500.0) is None
    _commit(cp, 1, 520.0)
    assert batch_began(cp, 500.0) == 520.0


def test_the_marker_appears_late_in_a_batch_after_the_first_commit(tmp_path):
    marker, cp = tmp_path / "holding", tmp_path / "checkpoint"
    real_time_marker(marker, cp, 500.0, 10_000, now=530.0)
    assert read_marker(marker) is None  # the driver's first batch: never
    _commit(cp, 0, 510.0)
    real_time_marker(marker, cp, 500.0, 10_000, now=515.0)
    assert read_marker(marker) is None  # 5 s into a 10-s batch: not yet
    real_time_marker(marker, cp, 500.0, 10_000, now=518.5)
    m = read_marker(marker)
    assert m["where"] == "real-time" and m["batch_began"] == 510.0 and m["batch"] is None
    _commit(cp, 1, 520.0)  # the batch committed: the next one began
    real_time_marker(marker, cp, 500.0, 10_000, now=521.0)
    assert read_marker(marker) is None
    real_time_marker(marker, cp, 500.0, 10_000, now=528.2)
    assert read_marker(marker)["batch_began"] == 520.0
