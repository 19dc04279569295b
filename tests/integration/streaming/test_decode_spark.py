"""The driver-side decoder (streaming.decode) against Spark's ``from_json``, value by value.

The observations were decoded in Spark with ``from_json`` and SPARK_VALUE_SCHEMA until the
decoding moved to the driver; :func:`_from_json_rows` is that decoding, kept here as the
reference the new one must reproduce column for column (shared session). The values are
the unit tier's (tests/unit/streaming/test_decode.py), where the decoder's own cases run
without a JVM.
"""

from __future__ import annotations

import random

import pytest

from streaming.decode import (
    DECODED_COLUMNS,
    NOT_FORMAT_1,
    decode_batch,
    raw_rows,
)
from streaming.observations import decode_row
from tests.unit.streaming.test_decode import ODD, RUN, STAMP, VALUES
from verifier.rundata.records import (
    RECORD_FORMAT_VERSION,
    SPARK_VALUE_SCHEMA,
    RecordIdentity,
    encode_value,
    encode_values,
)

pytestmark = pytest.mark.integration


def _from_json_rows(kafka_rows, run_id: str, isolation: str):
    """The Spark decoding the observer used before streaming.decode (the reference)."""
    from pyspark.sql import functions as F

    parsed = kafka_rows.select(
        "topic", "partition", "offset", "timestamp", "value",
        F.from_json(F.col("value").cast("string"), SPARK_VALUE_SCHEMA).alias("_r"))
    r = F.col("_r")
    missing = None
    for name in ("run", "pid", "ses", "p", "seq", "ts"):
        missing = r[name].isNull() if missing is None else (missing | r[name].isNull())
    error = (F.when(F.col("value").isNull(), F.lit("null value"))
             .when(r["v"].isNull(), F.lit(NOT_FORMAT_1))
             .when(r["v"] != RECORD_FORMAT_VERSION,
                   F.concat(F.lit("unknown record format version "), r["v"].cast("string")))
             .when(missing, F.lit("missing or bad field"))
             .when(r["run"] != F.lit(run_id), F.concat(F.lit("another run: "), r["run"])))
    ok = F.col("error").isNull()

    def ident(field: str, cast: str):
        return F.when(ok, r[field].cast(cast))

    return parsed.withColumn("error", error).select(
        F.lit("spark").alias("reader"), F.lit(isolation).alias("isolation"), F.col("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        ident("run", "string").alias("run"), ident("pid", "string").alias("pid"),
        ident("ses", "int").alias("ses"), ident("p", "int").alias("p"),
        ident("seq", "long").alias("seq"), ident("txn", "long").alias("txn"),
        F.when(ok, F.coalesce(r["abort"], F.lit(False))).alias("abort"),
        ident("ts", "long").alias("ts_send"),
        F.expr("unix_millis(timestamp)").alias("ts_broker"), (~ok).alias("foreign"),
        F.col("error"),
    )  # fmt: skip


def _both(spark, values: list) -> tuple[list[dict], list[dict]]:
    """(reference rows, new rows) for the same Kafka rows, in offset order."""
    kafka_rows = spark.createDataFrame(
        [("t", i % 3, i, STAMP, v) for i, v in enumerate(values)],
        "topic STRING, partition INT, offset LONG, timestamp TIMESTAMP, value BINARY")
    ref = sorted((r.asDict() for r in _from_json_rows(kafka_rows, RUN, "read_committed")
                  .collect()), key=lambda r: r["offset"])  # fmt: skip
    new = decode_batch(raw_rows(kafka_rows).toArrow(), RUN, "read_committed")
    assert tuple(new.column_names) == DECODED_COLUMNS
    return ref, sorted(new.to_pylist(), key=lambda r: r["offset"])


def _mutations(n: int, seed: int) -> list[bytes]:
    """Seeded random edits (replace, insert, delete a byte) of record-like values."""
    rng = random.Random(seed)
    bases = [encode_value(RecordIdentity(RUN, "x", 1, 0, 5, None, False, 7)),
             encode_values(RUN, "idem-0", 2, [(1, 12345)], 77, True, 1795314893744, 120)[0],
             b"{'v':1,'run':'run-1','pid':'x','ses':1,'p':0,'seq':5,'ts':7,'pad':[1.5e3]}"]
    alphabet = b"{}[]:,\"'\\ -+.0123456789eEtrufalsnNIxy\t\n\x01\xff\xc3\xa9"
    out = []
    for _ in range(n):
        v = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(v))
            op = rng.random()
            if op < 0.4:
                v[i] = rng.choice(alphabet)
            elif op < 0.7:
                v[i:i] = bytes([rng.choice(alphabet)])
            else:
                del v[i]
        out.append(bytes(v))
    return out


def test_same_rows_as_spark_from_json(spark):
    values = VALUES + ODD
    ref, new = _both(spark, values)
    for value, a, b in zip(values, ref, new, strict=True):
        assert b == a, value


def test_same_rows_as_spark_from_json_on_random_edits(spark):
    """Random edits of record values: the same rows, except where Spark's parser, after a
    syntax error inside the value of the string field ``run`` or ``pid``, resumes in the
    middle of the value (streaming.decode: here the value is unreadable). Both call those
    rows foreign."""
    values = _mutations(1500, seed=16)
    ref, new = _both(spark, values)
    resumed = 0
    for value, a, b in zip(values, ref, new, strict=True):
        if a != b and b["error"] == NOT_FORMAT_1 and a["foreign"] and (
                a["error"] == "missing or bad field" or a["error"].startswith("unknown record")):
            resumed += 1
            continue
        assert b == a, value
    assert resumed < len(values) // 50  # rare: most edits of run or pid parse the same
    assert 0 < sum(r["foreign"] for r in new) < len(new)


def test_agrees_with_the_plain_readers_decoding(spark):
    """Foreign or not, and the identity, as the plain reader decodes the same values."""
    _, new = _both(spark, VALUES)
    for row, value in zip(new, VALUES, strict=True):
        expected = decode_row(RUN, value)
        assert row["foreign"] == expected["foreign"], (value, row["error"])
        assert {k: row[k] for k in expected if k != "error"} == \
            {k: v for k, v in expected.items() if k != "error"}, value
        assert row["ts_broker"] == int(STAMP.timestamp() * 1000)
