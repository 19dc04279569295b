"""Decode Kafka rows into observation rows, in Spark (``from_json``, no Python UDFs).

A value that does not parse as record format 1, lacks an identity field or names
another run becomes a *foreign* row: identity columns null, ``foreign`` true, ``error``
saying why. Nothing is dropped; the observer decides nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifier.rundata.records import RECORD_FORMAT_VERSION, SPARK_VALUE_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: Fields a format 1 value must carry (``txn`` may be null, ``abort`` defaults to false,
#: as in verifier.rundata.records.decode_value).
_REQUIRED = ("run", "pid", "ses", "p", "seq", "ts")

#: Columns the decoded frame carries, in docs/formats.md §4 order; the sink adds
#: ``batch`` and ``observed_at`` when it writes.
DECODED_COLUMNS = (
    "reader", "isolation", "topic", "partition", "offset", "run", "pid", "ses", "p",
    "seq", "txn", "abort", "ts_send", "ts_broker", "foreign", "error",
)  # fmt: skip


def _error(run_id: str) -> Column:
    """Why a row is foreign (null when it is not)."""
    from pyspark.sql import functions as F

    r = F.col("_r")
    missing = None
    for name in _REQUIRED:
        cond = r[name].isNull()
        missing = cond if missing is None else (missing | cond)
    return (
        F.when(F.col("value").isNull(), F.lit("null value"))
        .when(r["v"].isNull(), F.lit("not a format 1 record: not JSON, not an object, "
                                     "or no version"))
        .when(r["v"] != RECORD_FORMAT_VERSION,
              F.concat(F.lit("unknown record format version "), r["v"].cast("string")))
        .when(missing, F.lit("missing or bad field"))
        .when(r["run"] != F.lit(run_id), F.concat(F.lit("another run: "), r["run"]))
    )


def decode_observations(kafka_rows: DataFrame, run_id: str, isolation: str) -> DataFrame:
    """Observation columns (all but ``batch``/``observed_at``) for a Kafka source frame."""
    from pyspark.sql import functions as F

    parsed = kafka_rows.select(
        "topic", "partition", "offset", "timestamp", "value",
        F.from_json(F.col("value").cast("string"), SPARK_VALUE_SCHEMA).alias("_r"),
    )
    with_error = parsed.withColumn("error", _error(run_id))
    ok = F.col("error").isNull()
    r = F.col("_r")

    def ident(field: str, cast: str) -> Column:
        return F.when(ok, r[field].cast(cast))

    return with_error.select(
        F.lit("spark").alias("reader"),
        F.lit(isolation).alias("isolation"),
        F.col("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        ident("run", "string").alias("run"),
        ident("pid", "string").alias("pid"),
        ident("ses", "int").alias("ses"),
        ident("p", "int").alias("p"),
        ident("seq", "long").alias("seq"),
        ident("txn", "long").alias("txn"),
        F.when(ok, F.coalesce(r["abort"], F.lit(False))).alias("abort"),
        ident("ts", "long").alias("ts_send"),
        F.expr("unix_millis(timestamp)").alias("ts_broker"),
        (~ok).alias("foreign"),
        F.col("error"),
    )
