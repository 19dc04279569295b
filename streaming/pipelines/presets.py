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
``dedup-state``               stateful: ``dropDuplicatesWithinWatermark`` on  exactly-once
                              the record's identity (RocksDB state store,
                              changelog checkpointing) into Delta
============================  ==============================================  ============

Spark documents its Kafka sink as at-least-once and ``foreachBatch`` as at-least-once
unless the writer uses the batch id; the presets show both sides of that sentence.

Fault injection: none of the presets holds a batch itself. The driver puts the batch
hold (streaming.pipelines.hold) into every pipeline's query, a preset's as a user's, so a
driver kill can land *mid-batch*: the Kafka, file and Delta presets get it in their
source frame, the ``foreachBatch`` presets after their function's write.
"""

from __future__ import annotations

from types import SimpleNamespace

from streaming.pipelines.contract import (
    CONF_BOOTSTRAP,
    CONF_PATH,
    CONF_TOPIC,
    HEADER_BATCH,
    HEADER_TASK,
)

#: micro-batch interval of the presets: a batch per second keeps the 2 cores for the rest
TRIGGER = "1 second"


def _conf(spark, key: str, default: str | None = None) -> str | None:
    return spark.conf.get(key, default)


# ----- the presets ---------------------------------------------------------------------

def task_headers(value):
    """The Kafka sink's record headers (contract.HEADER_*): the batch (the micro-batch's
    id) and the task attempt, ``<stage>.<partition>.<attempt>`` (Spark's "task P.A in
    stage S"), that wrote the row: a task Spark re-ran after its executor was lost wrote
    its rows again under another attempt (streaming.pipelines.readback reads them)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return []
    batch = ctx.getLocalProperty("streaming.sql.batchId") or ""
    task = f"{ctx.stageId()}.{ctx.partitionId()}.{ctx.attemptNumber()}"
    return [(HEADER_BATCH, batch.encode()), (HEADER_TASK, task.encode())]


def _kafka_sink(spark, source):
    from pyspark.sql import functions as F

    headers = F.udf(task_headers, "array<struct<key:string,value:binary>>") \
        .asNondeterministic()
    return (source.select("key", "value", headers(F.col("value")).alias("headers"))
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", _conf(spark, CONF_BOOTSTRAP))
            .option("topic", _conf(spark, CONF_TOPIC))
            .trigger(processingTime=TRIGGER))


def _file(spark, source):
    return (source.select("topic", "partition", "offset", "value")
            .writeStream.format("parquet").option("path", _conf(spark, CONF_PATH))
            .trigger(processingTime=TRIGGER))


def _delta(spark, source):
    return (source.select("topic", "partition", "offset", "value")
            .writeStream.format("delta").option("path", _conf(spark, CONF_PATH))
            .trigger(processingTime=TRIGGER))


def _foreach_batch(spark, source):
    path = _conf(spark, CONF_PATH)

    def append(df, batch_id):
        from pyspark.sql import functions as F

        df.withColumn("batch", F.lit(batch_id)).write.mode("append").parquet(path)

    return (source.select("topic", "partition", "offset", "value").writeStream
            .foreachBatch(append).trigger(processingTime=TRIGGER))


def _foreach_batch_idempotent(spark, source):
    path = _conf(spark, CONF_PATH)
    # one writer identity for the life of the output table: a replayed batch (same id)
    # finds its version already written and Delta skips the write
    app_id = f"verifier-foreach-batch-idempotent:{path}"

    def write(df, batch_id):
        from pyspark.sql import functions as F

        (df.withColumn("batch", F.lit(batch_id)).write.format("delta").mode("append")
         .option("txnAppId", app_id).option("txnVersion", batch_id).save(path))

    return (source.select("topic", "partition", "offset", "value").writeStream
            .foreachBatch(write).trigger(processingTime=TRIGGER))


#: the state store of ``dedup-state``: RocksDB, its changes checkpointed as a changelog
#: per batch (snapshots now and then) rather than a whole copy per batch
STATE_STORE_CONF = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
#: how late a record may come and still be recognised as a copy (the run's records are
#: seconds old; a watermark bounds the state by time, not by the number of records)
DEDUP_WATERMARK = "10 minutes"
#: a record's identity in the log: a batch replayed after a restart reads the same ones
RECORD_IDENTITY = ["topic", "partition", "offset"]


def _dedup_state(spark, source):
    """Stateful: each log record once (``dropDuplicatesWithinWatermark`` on its identity,
    state in RocksDB with changelog checkpointing) into a Delta table. A replay after a
    restart must find the state of the last committed batch: one ahead of the commit (the
    replayed batch's records already in it) drops them. A stale one shows nothing here:
    a replay reads the same offsets, which no committed state has seen, and Delta writes
    the replayed batch once. Its identity is the record's place in the log, not its
    value: a producer's own duplicate (one value at two offsets) is two records, as the
    judge counts them."""
    for key, value in STATE_STORE_CONF.items():
        spark.conf.set(key, value)  # read when the query starts, then kept in its checkpoint
    return (source.select("topic", "partition", "offset", "value", "timestamp")
            .withWatermark("timestamp", DEDUP_WATERMARK)
            .dropDuplicatesWithinWatermark(RECORD_IDENTITY)
            .select("topic", "partition", "offset", "value")
            .writeStream.format("delta").option("path", _conf(spark, CONF_PATH))
            .trigger(processingTime=TRIGGER))


def _read_files(spark):
    """The file sink's output as Spark readers see it: through ``_spark_metadata``."""
    return spark.read.parquet(_conf(spark, CONF_PATH))


def _read_delta(spark):
    return spark.read.format("delta").load(_conf(spark, CONF_PATH))


def _jdbc_presets() -> dict:
    from streaming.pipelines.jdbc import PRESETS as JDBC

    return JDBC


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
    "dedup-state": SimpleNamespace(build=_dedup_state, GUARANTEE="exactly-once",
                                   read_output=_read_delta),
}
#: the presets writing into PostgreSQL (streaming.pipelines.jdbc; issue 46)
PRESETS.update(_jdbc_presets())

__all__ = ["PRESETS", "TRIGGER", "task_headers"]
