"""The preset pipelines: the classic answers side by side (``--pipeline NAME``).

Each is what a user would write, with the tool's output location (contract.CONF_*):

============================  ==============================================  ============
preset                        sink                                            claims
============================  ==============================================  ============
``kafka-sink``                Spark's Kafka sink to an output topic           at-least-once
``file``                      the file sink (Parquet, ``_spark_metadata``)    exactly-once
``delta``                     a Delta Lake table (the Delta streaming sink)   exactly-once
``foreach-batch``             ``foreachBatch`` appending Parquet (naive)      at-least-once
``foreach-batch-idempotent``  ``foreachBatch`` into Delta keyed by batch id   exactly-once
                              (``txnAppId``/``txnVersion``: a replayed
                              batch's write is a no-op)
============================  ==============================================  ============

Spark documents its Kafka sink as at-least-once and ``foreachBatch`` as at-least-once
unless the writer uses the batch id; the presets show both sides of that sentence.

Fault injection (``verifier.pipeline.hold_ms``): to make a driver kill land *mid-batch*
(after part of a batch is written, before Spark commits it), each preset holds every
batch open for a while once some of it is written: the Kafka, file and Delta presets in
the task of the batch's first Spark partition (the other tasks finish and write), the
``foreachBatch`` presets after their write. While a batch holds, the file named by
``verifier.pipeline.hold_marker`` exists (a test can kill the driver exactly then).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from streaming.pipelines.contract import (
    CONF_BOOTSTRAP,
    CONF_HOLD_MARKER,
    CONF_HOLD_MS,
    CONF_PATH,
    CONF_TOPIC,
)

#: micro-batch interval of the presets: a batch per second keeps the 2 cores for the rest
TRIGGER = "1 second"


def _conf(spark, key: str, default: str | None = None) -> str | None:
    return spark.conf.get(key, default)


def _hold_ms(spark) -> int:
    return int(_conf(spark, CONF_HOLD_MS, "0") or 0)


def hold_open(marker: str | None, hold_ms: int) -> None:
    """Hold the current batch open ``hold_ms`` ms, the marker file present meanwhile."""
    if hold_ms <= 0:
        return
    path = Path(marker) if marker else None
    if path is not None:
        path.write_text(f"{time.time():.3f}\n")
    try:
        time.sleep(hold_ms / 1000)
    finally:
        if path is not None:
            path.unlink(missing_ok=True)


def with_hold(spark, source):
    """``source`` with a pass-through of ``value`` that holds the task of Spark partition
    0 once per task attempt (no-op without ``hold_ms``)."""
    hold_ms, marker = _hold_ms(spark), _conf(spark, CONF_HOLD_MARKER)
    if hold_ms <= 0:
        return source
    from pyspark.sql import functions as F

    def passthrough(value):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.partitionId() == 0:
            held = globals().setdefault("_held_attempts", set())
            if ctx.taskAttemptId() not in held:
                held.add(ctx.taskAttemptId())
                hold_open(marker, hold_ms)
        return value

    return source.withColumn("value", F.udf(passthrough, "binary")(F.col("value")))


# ----- the presets ---------------------------------------------------------------------

def _kafka_sink(spark, source):
    return (with_hold(spark, source).select("key", "value")
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", _conf(spark, CONF_BOOTSTRAP))
            .option("topic", _conf(spark, CONF_TOPIC))
            .trigger(processingTime=TRIGGER))


def _file(spark, source):
    return (with_hold(spark, source).select("topic", "partition", "offset", "value")
            .writeStream.format("parquet").option("path", _conf(spark, CONF_PATH))
            .trigger(processingTime=TRIGGER))


def _delta(spark, source):
    return (with_hold(spark, source).select("topic", "partition", "offset", "value")
            .writeStream.format("delta").option("path", _conf(spark, CONF_PATH))
            .trigger(processingTime=TRIGGER))


def _foreach_batch(spark, source):
    path, marker, hold_ms = _conf(spark, CONF_PATH), _conf(spark, CONF_HOLD_MARKER), \
        _hold_ms(spark)

    def append(df, batch_id):
        from pyspark.sql import functions as F

        df.withColumn("batch", F.lit(batch_id)).write.mode("append").parquet(path)
        hold_open(marker, hold_ms)

    return (source.select("topic", "partition", "offset", "value").writeStream
            .foreachBatch(append).trigger(processingTime=TRIGGER))


def _foreach_batch_idempotent(spark, source):
    path, marker, hold_ms = _conf(spark, CONF_PATH), _conf(spark, CONF_HOLD_MARKER), \
        _hold_ms(spark)
    # one writer identity for the life of the output table: a replayed batch (same id)
    # finds its version already written and Delta skips the write
    app_id = f"verifier-foreach-batch-idempotent:{path}"

    def write(df, batch_id):
        from pyspark.sql import functions as F

        (df.withColumn("batch", F.lit(batch_id)).write.format("delta").mode("append")
         .option("txnAppId", app_id).option("txnVersion", batch_id).save(path))
        hold_open(marker, hold_ms)

    return (source.select("topic", "partition", "offset", "value").writeStream
            .foreachBatch(write).trigger(processingTime=TRIGGER))


def _read_files(spark):
    """The file sink's output as Spark readers see it: through ``_spark_metadata``."""
    return spark.read.parquet(_conf(spark, CONF_PATH))


def _read_delta(spark):
    return spark.read.format("delta").load(_conf(spark, CONF_PATH))


#: name -> a module-like value with build, GUARANTEE and read_output (None: the tool
#: reads the output topic itself)
PRESETS: dict[str, SimpleNamespace] = {
    "kafka-sink": SimpleNamespace(build=_kafka_sink, GUARANTEE="at-least-once",
                                  read_output=None),
    "file": SimpleNamespace(build=_file, GUARANTEE="exactly-once", read_output=_read_files),
    "delta": SimpleNamespace(build=_delta, GUARANTEE="exactly-once", read_output=_read_delta),
    "foreach-batch": SimpleNamespace(build=_foreach_batch, GUARANTEE="at-least-once",
                                     read_output=_read_files),
    "foreach-batch-idempotent": SimpleNamespace(build=_foreach_batch_idempotent,
                                                GUARANTEE="exactly-once",
                                                read_output=_read_delta),
}

__all__ = ["PRESETS", "TRIGGER", "hold_open", "with_hold"]
