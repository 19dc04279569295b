"""The trigger a pipeline's writer uses, and Spark's real-time mode (issue 46).

Spark 4.1 added real-time mode (``writer.trigger(realTime="10 seconds")``, SPARK-53736):
one long-running task per input partition for the whole batch, records written as they
come, offsets committed at the end of the batch. A driver killed inside a batch restarts
from the last commit, so everything the batch wrote before the kill is written again:
the duplicate window grows with the trigger's duration. Spark's own limits (its guide,
"Real-time Mode"; PySpark 4.2.0): update output mode, the Kafka source, the Kafka,
``foreach``, console and memory sinks, stateless queries before 4.3, a duration of at
least ``spark.sql.streaming.realTimeMode.minBatchDuration`` (5 s), and a task slot for
every input partition at once.

What the tool does about it:

- :func:`recording_trigger`: while ``build`` runs, ``DataStreamWriter.trigger`` is
  wrapped so the driver knows the trigger (its ``ready.json`` says it; the report sets
  the duplicate window against it). A ``realTime`` trigger on a PySpark older than 4.1 is
  refused there with the reason (``verifier chaos`` builds every pipeline file before
  anything starts, in the PySpark the pipeline runs on: ``--spark-version``);
- no batch hold: Spark 4.2's real-time allowlist has no Python operator, and the hold is
  a Python pass-through (streaming.pipelines.hold). The driver marks the batch instead
  (:func:`real_time_marker`): its ``holding`` marker appears once a batch after this
  driver's first commit has run KILL_AT of its duration, and goes at the batch's commit,
  so the ``mid-batch`` trigger of a kill lands late in one real-time batch.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from streaming.pipelines.contract import PipelineError

#: the first Spark line with real-time mode
REAL_TIME_SINCE = (4, 1)
#: the driver marks a real-time batch mid-batch once it has run this share of its duration
KILL_AT = 0.8

_UNITS_MS = {"millisecond": 1, "ms": 1, "second": 1000, "sec": 1000, "s": 1000,
             "minute": 60_000, "min": 60_000, "hour": 3_600_000, "h": 3_600_000,
             "day": 86_400_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(?:interval\s+)?(\d+(?:\.\d+)?)\s*([a-z]+)\s*$")


def duration_ms(text: str) -> int | None:
    """``"10 seconds"`` -> 10000 (Spark's duration strings: a number and a unit,
    milliseconds to days); None when it is not one."""
    m = _DURATION.match(str(text).lower())
    if m is None:
        return None
    unit = m.group(2)
    factor = _UNITS_MS.get(unit) or _UNITS_MS.get(unit[:-1] if unit.endswith("s") else "")
    return None if factor is None else int(float(m.group(1)) * factor)


def describe(kwargs: dict) -> dict:
    """A ``trigger(...)`` call's keywords as the report says them: ``kind`` (``real-time``,
    ``processing-time``, ``available-now``, ``once``, ``continuous``) and ``ms`` (the
    duration, when it has one). No call: Spark's default, a micro-batch as soon as the
    previous one ends (``processing-time``, 0 ms)."""
    named = {k: v for k, v in kwargs.items() if v is not None}
    for key, kind in (("realTime", "real-time"), ("processingTime", "processing-time"),
                      ("continuous", "continuous")):
        if key in named:
            return {"kind": kind, "ms": duration_ms(named[key]), "text": str(named[key])}
    if named.get("availableNow"):
        return {"kind": "available-now", "ms": None}
    if named.get("once"):
        return {"kind": "once", "ms": None}
    return {"kind": "processing-time", "ms": 0, "text": "default"}


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:2])


def refuse_real_time(spec: str, pyspark_version: str) -> None:
    """PipelineError when ``pyspark_version`` has no real-time mode (before 4.1)."""
    if version_tuple(pyspark_version) < REAL_TIME_SINCE:
        raise PipelineError(
            f"pipeline {spec}: trigger(realTime=...) is Spark's real-time mode, which "
            f"Spark has from 4.1; this pipeline runs on PySpark {pyspark_version}: run it "
            "on PySpark 4.1 or later (--spark-version 4.2.0)")


@dataclass
class Seen:
    """The trigger calls ``build`` made (the last one counts, as for Spark)."""

    calls: list[dict] = field(default_factory=list)

    @property
    def trigger(self) -> dict:
        return describe(self.calls[-1] if self.calls else {})

    @property
    def real_time(self) -> bool:
        return self.trigger["kind"] == "real-time"


@contextlib.contextmanager
def recording_trigger(spec: str, pyspark_version: str | None = None) -> Iterator[Seen]:
    """While the block runs (the pipeline's ``build``), every ``writer.trigger(...)`` is
    recorded; ``realTime=`` on a PySpark before 4.1 raises PipelineError with the reason
    (PySpark 4.0's own answer would be a TypeError about an unexpected keyword)."""
    import pyspark
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    version = pyspark_version or pyspark.__version__
    seen = Seen()
    original = DataStreamWriter.trigger

    def trigger(writer, *args, **kwargs):
        if kwargs.get("realTime") is not None:
            refuse_real_time(spec, version)
        seen.calls.append(dict(kwargs))
        return original(writer, *args, **kwargs)

    DataStreamWriter.trigger = trigger  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        DataStreamWriter.trigger = original  # type: ignore[method-assign]


def latest_commit_time(checkpoint: Path) -> float | None:
    """When the checkpoint's latest batch was committed (its commit file's mtime, s)."""
    folder = checkpoint / "commits"
    try:
        times = [p.stat().st_mtime for p in folder.iterdir() if p.name.isdigit()]
    except OSError:
        return None
    return max(times, default=None)


def batch_began(checkpoint: Path, started_at: float) -> float | None:
    """When the real-time batch in flight began: at the latest commit since ``started_at``
    (the driver's start); None before this driver committed one. Its first batch also
    replays what its killed predecessor had not committed (from the checkpoint's last
    commit, or from the input's start), and the first of a restarted driver on a loaded
    machine took 13 s past its 10-s duration (2026-11-29): a kill then replays far more
    than one batch."""
    last = latest_commit_time(checkpoint)
    return last if last is not None and last > started_at else None


def late_in_batch(began: float, now: float, batch_ms: int) -> bool:
    """Has the batch that began at ``began`` run KILL_AT of its ``batch_ms``?"""
    return now - began >= KILL_AT * batch_ms / 1000


def real_time_marker(marker: Path, checkpoint: Path, started_at: float, batch_ms: int,
                     now: float | None = None) -> None:
    """Driver side, every half second of a real-time query under a kill scenario: the
    ``holding`` marker present while the batch in flight is late (``where`` =
    ``real-time``, with when it began and its duration), removed once it committed."""
    from verifier.rundata.pipelines import read_marker, write_marker

    now = time.time() if now is None else now
    began = batch_began(checkpoint, started_at)
    current = read_marker(marker)
    if current is not None and (began is None or current.get("batch_began") != round(began, 3)):
        marker.unlink(missing_ok=True)  # committed since: that batch is over
        current = None
    if current is None and began is not None and late_in_batch(began, now, batch_ms):
        write_marker(marker, None, "real-time",
                     {"batch_began": round(began, 3), "batch_ms": batch_ms})


__all__ = ["KILL_AT", "REAL_TIME_SINCE", "Seen", "batch_began", "describe", "duration_ms",
           "late_in_batch", "real_time_marker", "recording_trigger", "refuse_real_time"]
