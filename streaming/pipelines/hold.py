"""The batch hold: what makes "mid-batch" observable for every pipeline under test.

A scenario that kills a pipeline's driver wants the kill to land *mid-batch*: after part
of a batch is written, before Spark commits it, so the restart replays a batch whose
output is partly (or wholly) there already. The driver (streaming.pipelines.driver) puts
the hold into every pipeline's query, a preset's or a user's own, in one of two places:

- a ``foreachBatch`` writer: the function the pipeline hands to ``foreachBatch`` is
  wrapped (:func:`wrapping_foreach_batch`, while ``build`` runs): the wrapper calls it,
  then holds. The user's write is complete and the batch not committed;
- any other sink (Kafka, files, Delta): the source frame ``build`` receives carries a
  pass-through of ``value`` (:func:`with_hold`) that holds the task of Spark partition 0
  once per task attempt, while the other tasks finish and write; the driver watches the
  stage (:func:`watch_source_hold`) and says when they all have (``holding.written``),
  and only then is the batch mid-batch for the trigger: a kill while the other tasks
  still ran met nothing written (seen: a Kafka sink killed in a 22,463-offset batch
  replayed it without one duplicate, on a loaded 2-core machine).

While a batch holds, the marker file (``verifier.pipeline.hold_marker``,
``RUN/pipelines/<name>/holding``) exists and says which batch
(:func:`verifier.rundata.pipelines.write_marker`):
the nemesis's ``mid-batch`` trigger (verifier.harness.faults.triggers) kills then. The
hold is off (nothing wrapped, nothing added) unless the run kills a pipeline
(``verifier.pipeline.hold_ms`` > 0). The marker of a source hold is written by the
executor's Python worker: on the driver's machine (local mode, or the standalone cluster
the run starts beside it: verifier.harness.spark_standalone).

A run that kills a pipeline's *executor* (``verifier.pipeline.hold_where`` = ``task``)
holds partway through a task of the stage that writes the output instead (the frame
handed to ``writeStream``: :func:`holding_what_is_written`; after a stateful operator, in
the tasks that update its state): the first task of each stage to reach its row 101
(HOLD_AFTER_ROWS + 1, :func:`task_hold`) holds there, once the rows before it reached the
sink (a Kafka sink's producer sent them); its marker names the task (stage, partition,
attempt) and the Python worker whose executor runs it. One hold per stage of a
query's run (:func:`claim_stage`, a file beside the marker the executors of this machine
share): not "partition 0's first attempt", which on the loaded cluster often failed its
first Kafka fetch (2-s poll) before its row 101, and its retry (attempt 1) never held: the
delta and dedup-state pipelines went through a whole run of executor-loss (2026-11-28,
three batches each) without one held task. A retry of a task whose hold a kill ended does
not hold again (the stage is claimed): it runs to the end, as Spark re-runs it. An executor
killed then takes a task that wrote part of its output with it, and Spark re-runs the
task on another executor: the write of a sink without a commit protocol for its tasks
(Kafka) is repeated, one with one (files, Delta) discards the lost attempt's files. For
the rows before the hold to reach the sink the Python worker answers through an
unbuffered pipe (``spark.sql.execution.python.udf.buffer.size``): with the default a
worker's 100-row answer sat in a 64 KiB buffer, and a held task had sent nothing. A task
of 100 rows or fewer does not hold; a batch whose tasks all have that few does not: the
trigger waits for a larger batch.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from streaming.pipelines.contract import CONF_HOLD_MARKER, CONF_HOLD_MS, CONF_HOLD_WHERE
from verifier.rundata.pipelines import read_marker, write_marker, write_written, written_path

#: the Spark local property a micro-batch's jobs carry (StreamExecution.BATCH_ID_KEY)
BATCH_ID_PROPERTY = "streaming.sql.batchId"


def hold_settings(spark) -> tuple[int, str | None]:
    """(hold_ms, marker path) from the pipeline's session; hold_ms 0: no hold."""
    return (int(spark.conf.get(CONF_HOLD_MS, "0") or 0),
            spark.conf.get(CONF_HOLD_MARKER, None) or None)


#: a source hold waits at most this long for the driver to say the batch's other tasks
#: have written (``holding.written``); a batch whose tasks take longer is not held
WRITTEN_WAIT_S = 60.0


#: a task hold waits this long before its marker says so: the rows it let through are in
#: the sink's hands, but a Kafka sink's producer sends them from its own thread, and a
#: fresh producer first fetches the topic's metadata (seconds on a loaded machine): an
#: executor killed 0.1 s into the hold of a first batch had sent none of them, and one
#: killed 1.5 s into it (its 100 rows through, the executor's first batch, load 40) none
TASK_SETTLE_S = 5.0


def hold_open(marker: str | None, hold_ms: int, batch: int | None = None,
              where: str = "foreachBatch", extra: dict | None = None) -> None:
    """Hold the current batch open ``hold_ms`` ms, the marker file present meanwhile. A
    source hold (one task of the batch, the others still running) first waits, up to
    WRITTEN_WAIT_S, until the driver says the others have written; a task hold first
    lets its rows settle in the sink (TASK_SETTLE_S)."""
    if hold_ms <= 0:
        return
    path = Path(marker) if marker else None
    if where == "task":
        time.sleep(TASK_SETTLE_S)
    if path is not None:
        write_marker(path, batch, where, extra)
    try:
        if path is not None and where == "source":
            _wait_written(path)
        time.sleep(hold_ms / 1000)  # the hold itself: the window a kill lands in
    finally:
        if path is not None:
            path.unlink(missing_ok=True)
            written_path(path).unlink(missing_ok=True)


def _wait_written(marker: Path) -> None:
    """Until the driver says the held batch's other tasks have written; a batch whose
    tasks take longer than WRITTEN_WAIT_S is held anyway, and the trigger, which needs the
    written file, does not fire on it."""
    from verifier.rundata.errors import WaitTimeout
    from verifier.rundata.waiting import wait_until

    try:
        wait_until(lambda: (written_path(marker).exists(), None), timeout=WRITTEN_WAIT_S,
                   what="the held batch's other tasks to write",
                   expected=f"{written_path(marker)} present", interval=0.1,
                   max_interval=0.1)
    except WaitTimeout:
        pass


def others_written(spark) -> bool:
    """Driver side: the running stage has one task left (the held one) and every other
    one completed."""
    tracker = spark.sparkContext.statusTracker()
    for sid in tracker.getActiveStageIds():
        info = tracker.getStageInfo(sid)
        if info is not None and info.numTasks > 1 and info.numActiveTasks <= 1 and \
                info.numCompletedTasks >= info.numTasks - 1:
            return True
    return False


def watch_source_hold(spark, marker: Path) -> None:
    """Driver side, called every half second while the query runs: while a source hold
    waits (its marker present, no written file yet), write the written file once the
    other tasks of its stage have completed."""
    data = read_marker(marker)
    if data is None or data.get("where") != "source" or written_path(marker).exists():
        return
    try:
        done = others_written(spark)
    except Exception:  # noqa: BLE001 - a JVM going away: the hold times out by itself
        return
    if done:
        write_written(marker, data.get("batch"))


#: a task hold lets this many rows of its task through to the sink before it holds: a
#: Python worker answers a plain UDF's rows 100 at a time (PySpark 4.0.0's fixed batch:
#: the runner never reads ``spark.sql.execution.python.udf.maxRecordsPerBatch``), so the
#: 101st row is the first whose evaluation comes after rows have left the worker
HOLD_AFTER_ROWS = 100
#: the Python UDF settings that let those rows through at once (the module's docstring):
#: the worker's answers unbuffered (2 bytes: Python reads 1 as "line buffered", which
#: binary files are not). With the default 64 KiB buffer a held task had sent nothing:
#: the Kafka topic stayed empty through a 20-s hold at row 9 (2026-11-28, local[2]).
ROW_BY_ROW = {"spark.sql.execution.python.udf.buffer.size": "2"}


def task_hold(state: dict, task: int, claim: Callable[[], bool] = lambda: True,
              after: int = HOLD_AFTER_ROWS) -> bool:
    """Whether the row now passing through task ``task`` (its attempt id) holds: its row
    ``after`` + 1, if ``claim()`` says no other task of its stage has held (the first to
    get there takes the stage). ``state``: the rows seen per task, kept across rows of one
    Python worker (only the current task's count is kept)."""
    seen = state.get(task, 0)
    if task not in state:
        state.clear()
    state[task] = seen + 1
    return seen == after and claim()


#: the Spark local property a micro-batch's jobs carry their query run's id in (the
#: query's thread sets its job group to the run id, StreamExecution.runStream): a restart
#: of the query is another run, whose stage ids start again at 0
JOB_GROUP_PROPERTY = "spark.jobGroup.id"


def claim_stage(marker: Path, run: str, stage: int) -> bool:
    """Take the hold of ``stage`` of query run ``run`` for the calling task: True once
    (the file is created exclusively, so of two tasks reaching their row 101 together one
    holds), False for every other task or attempt of that stage. An earlier stage's claim
    is removed then: a query runs one batch's stages after another."""
    name = f"{marker.name}.claim-{''.join(c for c in run if c.isalnum() or c == '-')}-{stage}"
    try:
        os.close(os.open(marker.with_name(name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:  # the folder gone (the run ending): hold nowhere rather than fail
        return False
    for old in marker.parent.glob(f"{marker.name}.claim-*"):
        if old.name != name:
            old.unlink(missing_ok=True)
    return True


def task_marker(ctx, rows: int) -> dict:
    """The task a task hold holds, for its marker."""
    return {"stage": ctx.stageId(), "partition": ctx.partitionId(),
            "attempt": ctx.attemptNumber(), "task": ctx.taskAttemptId(), "rows": rows}


def with_task_hold(spark, source, hold_ms: int, marker: str | None):
    """``source`` with a pass-through of ``value`` that holds partway through the first
    task of each stage to reach its row 101 (:func:`task_hold`), its rows before the hold
    let through at once."""
    from pyspark.sql import functions as F

    for key, value in ROW_BY_ROW.items():
        spark.conf.set(key, value)

    def passthrough(value):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is None or marker is None:
            return value

        def claim() -> bool:
            return claim_stage(Path(marker), ctx.getLocalProperty(JOB_GROUP_PROPERTY) or "",
                               ctx.stageId())

        if task_hold(globals().setdefault("_task_rows", {}), ctx.taskAttemptId(), claim):
            batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
            hold_open(marker, hold_ms, int(batch) if batch and batch.isdigit() else None,
                      "task", task_marker(ctx, HOLD_AFTER_ROWS))
        return value

    # the value's own type: a pipeline's output value may be text (issue 46: an aggregate)
    kind = source.schema["value"].dataType
    return source.withColumn("value", F.udf(passthrough, kind)(F.col("value")))


def with_hold(spark, source):
    """``source`` with a pass-through of ``value`` that holds the task of Spark partition
    0 once per task attempt (no-op without ``hold_ms``); when the run kills executors
    (``verifier.pipeline.hold_where`` = ``task``) partway through the first task of each
    stage to reach its row 101 instead (:func:`with_task_hold`)."""
    hold_ms, marker = hold_settings(spark)
    if hold_ms <= 0:
        return source
    if spark.conf.get(CONF_HOLD_WHERE, "source") == "task":
        return with_task_hold(spark, source, hold_ms, marker)
    from pyspark.sql import functions as F

    def passthrough(value):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.partitionId() == 0:
            held = globals().setdefault("_held_attempts", set())
            if ctx.taskAttemptId() not in held:
                held.add(ctx.taskAttemptId())
                batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
                hold_open(marker, hold_ms, int(batch) if batch and batch.isdigit() else None,
                          "source")
        return value

    return source.withColumn("value", F.udf(passthrough, "binary")(F.col("value")))


class Wrapped:
    """What :func:`wrapping_foreach_batch` saw: the functions it wrapped."""

    def __init__(self) -> None:
        self.functions: list = []

    @property
    def used(self) -> bool:
        return bool(self.functions)


@contextlib.contextmanager
def wrapping_foreach_batch(marker: str | None, hold_ms: int) -> Iterator[Wrapped]:
    """While the block runs (the pipeline's ``build``), every
    ``DataStreamWriter.foreachBatch(func)`` registers ``func`` followed by the hold.

    PySpark hands the function straight to the JVM and keeps no reference on the writer,
    so it cannot be wrapped afterwards: the method is replaced for the time of ``build``
    (the driver's own process, one pipeline per process)."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    seen = Wrapped()
    original = DataStreamWriter.foreachBatch

    def foreach_batch(writer, func):
        def then_hold(df, batch_id):
            func(df, batch_id)
            hold_open(marker, hold_ms, int(batch_id), "foreachBatch")

        seen.functions.append(func)
        return original(writer, then_hold)

    DataStreamWriter.foreachBatch = foreach_batch  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        DataStreamWriter.foreachBatch = original  # type: ignore[method-assign]


def _dataframe_class():
    """The DataFrame class whose ``writeStream`` a pipeline's ``build`` calls (PySpark
    4's classic one; 3.5's only one)."""
    try:
        from pyspark.sql.classic.dataframe import DataFrame
    except ImportError:
        from pyspark.sql.dataframe import DataFrame
    return DataFrame


@contextlib.contextmanager
def holding_what_is_written(hold) -> Iterator[Wrapped]:
    """While the block runs (the pipeline's ``build``), ``frame.writeStream`` of a frame
    with a ``value`` column starts its writer on ``hold(frame)``: the task hold sits in
    the stage that writes to the sink, after whatever the pipeline does. For a stateful
    pipeline (``dedup-state``: a shuffle, then ``dropDuplicatesWithinWatermark``) that is
    the stage whose tasks update the state store and write the output, not the stage that
    reads Kafka and writes shuffle files, where a kill met no state and no output."""
    cls = _dataframe_class()
    original = cls.__dict__["writeStream"]
    seen = Wrapped()

    def write_stream(df):
        if "value" in df.columns:
            seen.functions.append(df)
            df = hold(df)
        return original.fget(df)

    cls.writeStream = property(write_stream)  # type: ignore[method-assign,assignment]
    try:
        yield seen
    finally:
        cls.writeStream = original  # type: ignore[method-assign]


def build_with_hold(spark, build, source):
    """``build(spark, source)`` with the batch hold in place (module docstring): a task
    hold in the frame the writer writes (:func:`holding_what_is_written`), or in the
    source frame when that has no ``value``; else a ``foreachBatch`` writer's function
    wrapped; for any other sink ``build`` runs again on the held source (its first
    writer, built on the plain source, is dropped unstarted: a writer is lazy, nothing
    ran). Without ``hold_ms`` just ``build(spark, source)``."""
    hold_ms, marker = hold_settings(spark)
    if hold_ms <= 0:
        return build(spark, source)
    if spark.conf.get(CONF_HOLD_WHERE, "source") == "written":
        # where the sink itself writes (issue 46: an aggregation's output is written after
        # its shuffle, so a hold in the source would hold before anything is written): a
        # foreachBatch function wrapped, else a task of the stage that writes
        with wrapping_foreach_batch(marker, hold_ms) as wrapped:
            writer = build(spark, source)
        if wrapped.used:
            return writer
        spark.conf.set(CONF_HOLD_WHERE, "task")
    if spark.conf.get(CONF_HOLD_WHERE, "source") == "task":  # inside the tasks, any sink
        with holding_what_is_written(
                lambda df: with_task_hold(spark, df, hold_ms, marker)) as held:
            writer = build(spark, source)
        if held.used:
            return writer
        return build(spark, with_hold(spark, source))
    with wrapping_foreach_batch(marker, hold_ms) as wrapped:
        writer = build(spark, source)
    if wrapped.used:
        return writer
    return build(spark, with_hold(spark, source))


__all__ = ["HOLD_AFTER_ROWS", "JOB_GROUP_PROPERTY", "ROW_BY_ROW", "build_with_hold",
           "claim_stage", "hold_open", "hold_settings", "holding_what_is_written",
           "others_written", "task_hold",
           "task_marker", "watch_source_hold", "with_hold", "with_task_hold",
           "wrapping_foreach_batch"]
