"""Read a pipeline's output back into identity rows (verifier.rundata.pipelines).

Where the output is, and how Spark users read it:

- ``read_output(spark)`` when the pipeline has one (a ``foreachBatch`` into a database);
  the presets use it for files (through the file sink's ``_spark_metadata`` log, as
  Spark readers do) and Delta tables;
- otherwise what the pipeline wrote under the tool's output path: a Delta table
  (``_delta_log``) or a file sink's Parquet (``_spark_metadata``);
- otherwise the output topic, read from the beginning to its end offsets at
  read_committed by a plain kafka-python consumer.

Every value is decoded by the same function as the plain reader's (record format 1);
a value that does not decode is a foreign row, unless the pipeline file names an
``ID_FIELD`` and the value is the user's JSON object holding it: then that field is
decoded the same way. The output's ``batch`` column, when it has
one, is kept as evidence, and so are the checkpoints' planned batches.
"""

from __future__ import annotations

import orjson
import pyarrow as pa
from kafka import KafkaConsumer, TopicPartition

from streaming.observations import decode_row
from streaming.pipelines.contract import HEADER_BATCH, HEADER_TASK
from verifier.rundata.checkpoint import planned_batches
from verifier.rundata.pipelines import OUTPUT_SCHEMA, PipelineLayout
from verifier.rundata.waiting import wait_until


def decode_values(run_id: str, values: list, batches: list | None = None,
                  tasks: list | None = None, id_field: str | None = None) -> pa.Table:
    """Identity rows of the given values (bytes or text), with their batch ids and task
    attempts when known. With ``id_field`` (the pipeline file's ID_FIELD), a value that
    is not itself an identity but a JSON object holding that field (the user's record
    as the producer wrote it) is named by the field."""
    rows = []
    for i, v in enumerate(values):
        if isinstance(v, str):
            v = v.encode()
        row = decode_row(run_id, v)
        if row["foreign"] and id_field is not None:
            inner = field_identity(v, id_field)
            if inner is not None:
                row = decode_row(run_id, inner)
        row["batch"] = None if batches is None else batches[i]
        row["task"] = None if tasks is None else tasks[i]
        rows.append({k: row.get(k) for k in OUTPUT_SCHEMA.names})
    return pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA)


def field_identity(value: bytes | None, id_field: str) -> bytes | None:
    """The identity text in the top-level field ``id_field`` of a JSON object value, or
    None when the value is no such object."""
    if not value or not value.lstrip().startswith(b"{"):
        return None
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    inner = obj.get(id_field) if isinstance(obj, dict) else None
    return inner.encode() if isinstance(inner, str) else None


def frame_values(df, value_column: str) -> tuple[list, list | None]:
    """(values, batches or None) of an output DataFrame, collected as Arrow."""
    if value_column not in df.columns:
        raise ValueError(f"the output has no {value_column!r} column (it has {df.columns}): "
                         "read_output must return the written rows with their value")
    cols = [value_column] + (["batch"] if "batch" in df.columns else [])
    table = to_arrow(df.select(*cols))
    values = table.column(0).to_pylist()
    batches = table.column("batch").to_pylist() if "batch" in cols else None
    return values, batches


def to_arrow(df):
    """The frame's rows as an Arrow table: ``DataFrame.toArrow`` (PySpark 4.0+), or on
    PySpark 3.5 (``--spark-version 3.5.7``, no such method, no pandas in its environment)
    the Arrow batches its ``toPandas`` collects, empty with the frame's own schema."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()  # PySpark 3.5's own Arrow collection
    return pa.Table.from_batches(batches, schema=to_arrow_schema(df.schema))


def source_of(where: PipelineLayout, has_reader: bool) -> str:
    """How this pipeline's output is read back: read_output, delta, files or topic."""
    if has_reader:
        return "read_output"
    if (where.output / "_delta_log").is_dir():
        return "delta"
    if (where.output / "_spark_metadata").is_dir():
        return "files"
    return "topic"


def read_frame(spark, where: PipelineLayout, source: str, read_output):
    if source == "read_output":
        return read_output(spark)
    if source == "delta":
        return spark.read.format("delta").load(str(where.output))
    return spark.read.parquet(str(where.output))


def read_topic(bootstrap_servers: str, topic: str, timeout: float = 120,
               **client_config) -> list[bytes]:
    """Every value of ``topic`` at read_committed, from the beginning to its end offsets."""
    return read_topic_records(bootstrap_servers, topic, timeout, **client_config)[0]


def _header(message, key: str) -> str | None:
    for k, v in message.headers or ():
        if k == key and v is not None:
            return v.decode(errors="replace")
    return None


def read_whole(bootstrap_servers: str, topic: str, on_message, isolation: str =
               "read_committed", timeout: float = 120, what: str = "", **client_config) -> None:
    """Call ``on_message`` on every record of ``topic`` at ``isolation``, from the
    beginning to the end offsets it has when the read starts (a plain consumer, no group)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers.split(","),
                             isolation_level=isolation, enable_auto_commit=False,
                             group_id=None, max_poll_records=5000, **client_config)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic)
                                                        or ())]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        pending = {tp for tp in tps if consumer.position(tp) < ends[tp]}

        def probe() -> tuple[bool, dict]:
            for tp, messages in consumer.poll(timeout_ms=500).items():
                for m in messages:
                    if m.offset < ends[tp]:
                        on_message(m)
            for tp in list(pending):
                if consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
                    consumer.pause(tp)
            return not pending, {f"{tp.topic}-{tp.partition}": f"{consumer.position(tp)}/"
                                 f"{ends[tp]}" for tp in pending}

        wait_until(probe, timeout=timeout, interval=0.001, max_interval=0.01,
                   what=what or f"reading {topic} at {isolation}",
                   expected="position == end offset for every partition",
                   describe=lambda b: f"position/end still behind: {b}")
    finally:
        consumer.close()


def read_topic_records(bootstrap_servers: str, topic: str, timeout: float = 120,
                       **client_config) -> tuple[list[bytes], list | None, list | None]:
    """(values, batches, tasks) of ``topic`` at read_committed, from the beginning to its
    end offsets; batches and tasks from the records' headers (None when no record has
    them)."""
    values: list[bytes] = []
    batches: list = []
    tasks: list = []

    def keep(m) -> None:
        values.append(m.value)
        batch = _header(m, HEADER_BATCH)
        batches.append(int(batch) if batch and batch.isdigit() else None)
        tasks.append(_header(m, HEADER_TASK))

    read_whole(bootstrap_servers, topic, keep, timeout=timeout,
               what=f"reading the pipeline's output topic {topic}",
               **{"client_id": "verifier.pipeline-readback", **client_config})
    return (values, batches if any(b is not None for b in batches) else None,
            tasks if any(t is not None for t in tasks) else None)


def checkpoint_batches(where: PipelineLayout) -> list[dict]:
    """Every planned batch of every checkpoint the pipeline had (lost ones first): its
    generation, id, end offsets (``"topic-partition": next offset``), committed or not.
    An entry a killed driver left half-written is left out."""
    out = []
    for gen, ckpt in enumerate(where.checkpoints()):
        for b in planned_batches(ckpt):
            if b.ends is None:
                continue
            out.append({"generation": gen, "batch": b.batch,
                        "committed": b.committed_ms is not None,
                        "end": {f"{t}-{p}": o for (t, p), o in sorted(b.ends.items())}})
    return out


__all__ = ["checkpoint_batches", "decode_values", "field_identity",
           "frame_values", "read_frame", "read_topic", "read_topic_records", "read_whole",
           "source_of"]
