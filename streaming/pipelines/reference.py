"""A pipeline's source as its file declares it, its output's rows, and its fault-free
reference runs (issue 46), in its driver process.

**The source.** A pipeline that declares ``INPUT`` reads those topics only
(``<run>.in.<topic>`` on the cluster) with their headers (each record's identity is its
``verifier.id`` header), and its ``topic`` column says the names the file uses; any other
pipeline reads the run's own topics, as before.

**The reference.** After the faulted query stopped (the run drained, the faults healed),
a pipeline judged by the reference oracle runs the same ``build`` twice more in the same
Spark session, each with a fresh checkpoint and output (``RUN/pipelines/<name>/
reference-<k>/``; a Kafka sink writes ``<output topic>.ref<k>``), over the same input log
from its start, no batch hold and no fault, to the end of what is there
(``trigger(availableNow=True)``): the first in as few batches as Spark plans, the second
in batches of :data:`SECOND_BATCH` offsets, so what depends on where batches end (as well
as processing times and random ids) shows up as a difference between the two. Each run's
rows, and the faulted output's, are read back whole (``rows.parquet``) for the oracle
(verifier.judge.pipeline_reference).
"""

from __future__ import annotations

import logging
import shutil
import time

import pyarrow as pa

from streaming.pipelines.contract import CONF_HOLD_MS, CONF_PATH, CONF_TOPIC
from streaming.pipelines.jdbc import CONF_REFERENCE  # a database sink's table per run
from streaming.pipelines.readback import to_arrow
from verifier.judge.reference import ORDER
from verifier.rundata.reference_runs import (
    RUNS,
    ReferenceLayout,
    write_info,
    write_rows,
)

log = logging.getLogger("streaming.pipelines.reference")

#: the second fault-free run's batch size (maxOffsetsPerTrigger)
SECOND_BATCH = 2000
#: one fault-free run over the whole input log, at most (a Spark job per batch)
RUN_TIMEOUT_S = 600
#: the columns of a Kafka output topic compared (the rest are where and when it landed)
KAFKA_COLUMNS = ("key", "value")


def pipeline_source(spark, plan, entry: dict, security: dict, kafka_source, options=None):
    """The frame ``build`` receives (``kafka_source``: the driver's, whose options every
    pipeline shares); ``options``: more source options (the second reference's batch
    size)."""
    from pyspark.sql import functions as F

    mapped = entry.get("input_topics") or {}
    topics = entry.get("topics") or plan.topics  # an older plan: every run topic
    source = kafka_source(spark, plan.bootstrap_servers, topics,
                          entry.get("isolation", "read_committed"), security,
                          bool(entry.get("fail_on_data_loss", True)),
                          {**({"includeHeaders": "true"} if mapped else {}), **(options or {})})
    if not mapped:
        return source
    name = F.col("topic")
    for user, cluster in mapped.items():  # the names the file uses
        name = F.when(F.col("topic") == cluster, F.lit(user)).otherwise(name)
    return source.withColumn("topic", name)


def sink_kind(output_path, has_reader: bool) -> str:
    """How an output is read: read_output, delta, files or topic (as readback.source_of)."""
    from pathlib import Path

    out = Path(output_path)
    if has_reader:
        return "read_output"
    if (out / "_delta_log").is_dir():
        return "delta"
    if (out / "_spark_metadata").is_dir():
        return "files"
    return "topic"


def read_rows(spark, pipeline, output_path, topic: str, bootstrap: str,
              security: dict) -> pa.Table:
    """Every row of an output, in read order (:data:`ORDER`): a Kafka topic's key and
    value by partition and offset at read_committed, a table's rows by its ``batch``
    column when it has one."""
    from pyspark.sql import functions as F

    kind = sink_kind(output_path, pipeline.read_output is not None)
    if kind == "topic":
        df = (spark.read.format("kafka").options(**security)
              .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("endingOffsets", "latest")
              .option("kafka.isolation.level", "read_committed").load()
              .orderBy("partition", "offset")
              .select(*(F.col(c).cast("string").alias(c) for c in KAFKA_COLUMNS)))
    else:
        if kind == "read_output":
            df = pipeline.read_output(spark)
        elif kind == "delta":
            df = spark.read.format("delta").load(str(output_path))
        else:
            df = spark.read.parquet(str(output_path))
        if "batch" in df.columns:
            df = df.orderBy("batch")
    table = to_arrow(df)
    return table.append_column(ORDER, pa.array(range(table.num_rows), pa.int64()))


def _settings(spark, values: dict) -> None:
    for key, value in values.items():
        spark.conf.set(key, value)


def _ensure_topic(plan, topic: str, like: str) -> None:
    """The reference's output topic, with as many partitions as the faulted one's."""
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    sec = plan.client_security()
    consumer = KafkaConsumer(bootstrap_servers=plan.bootstrap_servers, **sec)
    try:
        parts = len(consumer.partitions_for_topic(like) or ()) or 1
    finally:
        consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=plan.bootstrap_servers, **sec)
    try:
        admin.create_topics([NewTopic(topic, parts, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()


def reference_run(spark, pipeline, plan, entry: dict, layout: ReferenceLayout, k: int,
                  security: dict, kafka_source) -> dict:
    """Fault-free run ``k``: its query to the end of the input log, its rows read back."""
    started = time.monotonic()
    shutil.rmtree(layout.run(k), ignore_errors=True)
    topic = f"{entry['output_topic']}.ref{k}"
    saved = {key: spark.conf.get(key, None) for key in (CONF_PATH, CONF_TOPIC, CONF_HOLD_MS,
                                                        CONF_REFERENCE)}
    _settings(spark, {CONF_PATH: str(layout.output(k)), CONF_TOPIC: topic,
                      CONF_HOLD_MS: "0", CONF_REFERENCE: str(k)})
    try:
        if sink_kind(layout.where.output, pipeline.read_output is not None) == "topic":
            _ensure_topic(plan, topic, entry["output_topic"])
        options = {"maxOffsetsPerTrigger": str(SECOND_BATCH)} if k > 1 else None
        source = pipeline_source(spark, plan, entry, security, kafka_source, options)
        query = (pipeline.build(spark, source).trigger(availableNow=True)
                 .queryName(f"reference-{k}-{pipeline.name}")
                 .option("checkpointLocation", str(layout.checkpoint(k))).start())
        if not query.awaitTermination(RUN_TIMEOUT_S):
            query.stop()
            raise TimeoutError(f"reference run {k} did not reach the end of the input in "
                               f"{RUN_TIMEOUT_S} s")
        if query.exception() is not None:
            raise RuntimeError(str(query.exception())[:1000])
        rows = read_rows(spark, pipeline, layout.output(k), topic, plan.bootstrap_servers,
                         security)
        write_rows(layout.run_rows(k), rows)
    finally:
        _settings(spark, {key: v for key, v in saved.items() if v is not None})
    return {"k": k, "rows": rows.num_rows, "seconds": round(time.monotonic() - started, 3)}


def read_back_and_compare_runs(spark, pipeline, plan, entry: dict, where, security: dict,
                               kafka_source, query_error: str | None = None) -> None:
    """The faulted output's rows, then the fault-free runs, into the run folder
    (``reference.json`` says how they went; an ``error`` leaves the column UNKNOWN)."""
    layout = ReferenceLayout(where)
    started = time.monotonic()
    info: dict = {"pipeline": pipeline.name, "runs": [],
                  **({"query_error": query_error} if query_error else {})}
    try:
        rows = read_rows(spark, pipeline, where.output, entry["output_topic"],
                         plan.bootstrap_servers, security)
        write_rows(layout.rows, rows)
        info["rows"] = rows.num_rows
        for k in RUNS:
            info["runs"].append(reference_run(spark, pipeline, plan, entry, layout, k,
                                              security, kafka_source))
            log.info("reference run %d of %s: %s", k, pipeline.name, info["runs"][-1])
    except Exception as exc:  # noqa: BLE001 - recorded: the judge says UNKNOWN with it
        log.error("reference of %s failed: %s", pipeline.name, exc)
        info["error"] = f"{type(exc).__name__}: {str(exc)[:800]}"
    info["seconds"] = round(time.monotonic() - started, 3)
    write_info(layout, info)


__all__ = ["CONF_REFERENCE", "SECOND_BATCH", "pipeline_source", "read_back_and_compare_runs",
           "read_rows", "reference_run", "sink_kind"]
