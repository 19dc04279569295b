"""Decode Kafka rows into observation rows, on the driver, with pyarrow (no Python UDFs).

The observer's query only projects the Kafka source's columns (:func:`raw_rows`:
``topic, partition, offset, ts_broker, value``); the sink collects them as Arrow and
:func:`decode_batch` turns them into the observation columns. Decoding in Spark
(``from_json`` with ``SPARK_VALUE_SCHEMA``) cut what one query alone collected on this
2-core machine from ~210k to ~125k rows/s (200k-offset batches, 2026-11-24); here a
generator's value costs ~1.5 us of the driver's time (README, benchmarks).

A value that does not parse as record format 1, lacks an identity field or names another
run becomes a *foreign* row: identity columns null, ``foreign`` true, ``error`` one of

- ``null value``
- ``not a format 1 record: not JSON, not an object, or no version``
- ``unknown record format version <v>``
- ``missing or bad field`` (``run``, ``pid``, ``ses``, ``p``, ``seq`` or ``ts`` absent,
  null or of the wrong type; ``txn`` may be null, ``abort`` defaults to false)
- ``another run: <run>``

Nothing is dropped; the observer decides nothing.

**What a value means** is what Spark's ``from_json`` made of it: streaming.jsonvalue
(:func:`parse_value`) states it for any value.

Two ways to one result: values written by the generators' template
(verifier.rundata.records.encode_values: the keys in order, plain ASCII strings, numbers
in range, optional ``x`` padding) are decoded in bulk (a regular expression checks the
template, pyarrow's JSON reader reads the fields); every other value goes through
:func:`parse_value`. The tests check that both give the same rows on template values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from streaming.jsonvalue import FIELDS, parse_value
from verifier.rundata.pipeline_file import ID_HEADER
from verifier.rundata.records import RECORD_FORMAT_VERSION

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Columns the query hands the sink (:func:`raw_rows`).
RAW_COLUMNS = ("topic", "partition", "offset", "ts_broker", "value")

#: Columns the decoded table carries, in docs/formats.md §4 order; the sink adds
#: ``batch`` and ``observed_at`` when it writes.
DECODED_COLUMNS = (
    "reader", "isolation", "topic", "partition", "offset", "run", "pid", "ses", "p",
    "seq", "txn", "abort", "ts_send", "ts_broker", "foreign", "error",
)  # fmt: skip

#: Fields a format 1 value must carry (``txn`` may be null, ``abort`` defaults to false).
_REQUIRED = ("run", "pid", "ses", "p", "seq", "ts")

NOT_FORMAT_1 = "not a format 1 record: not JSON, not an object, or no version"
NULL_VALUE = "null value"
MISSING = "missing or bad field"

_ARROW = {"int": pa.int32(), "long": pa.int64(), "str": pa.string(), "bool": pa.bool_()}


def raw_rows(kafka_rows: DataFrame) -> DataFrame:
    """The Kafka source's columns the observation rows need, undecoded (RAW_COLUMNS); a
    source with headers (a run with a pipeline file's own records) gives a record's
    ``verifier.id`` header as its value when it has one."""
    from pyspark.sql import functions as F

    value = F.col("value")
    if "headers" in kafka_rows.columns:  # a user's record: its identity in a header
        value = F.coalesce(F.expr(f"try_element_at(filter(headers, h -> h.key = "
                                  f"'{ID_HEADER}'), 1).value"), value)
    return kafka_rows.select(
        F.col("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.expr("unix_millis(timestamp)").alias("ts_broker"),
        value.alias("value"),
    )


# ---------------------------------------------------------------------------- bulk path

_S = r'"[ !#-\[\]-~]*"'  # printable ASCII, no quote, no backslash: no escapes to decode
_I9 = r"(?:0|-?[1-9][0-9]{0,8})"  # always an int32 (no "-0": read as a double by some)
_I18 = r"(?:0|-?[1-9][0-9]{0,17})"  # always an int64
#: The generators' template (encode_values), the whole value.
TEMPLATE = (rf'^\{{"v":{RECORD_FORMAT_VERSION},"run":{_S},"pid":{_S},"ses":{_I9},"p":{_I9},'
            rf'"seq":{_I18},"txn":(?:null|{_I18}),"abort":(?:true|false),"ts":{_I18}'
            r'(?:,"pad":"x*")?\}$')
_TEMPLATE_SCHEMA = pa.schema([(k, _ARROW[kind]) for k, kind in FIELDS.items() if k != "v"])


def _bulk(values: pa.Array) -> pa.Table:
    """The fields of template values (no nulls), one row each, in order."""
    joined = pc.binary_join(
        pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values), b"\n")
    # a block must hold whole values (the default, 1 MiB, would fail on larger records)
    longest = pc.max(pc.binary_length(values)).as_py() or 0
    return pj.read_json(
        pa.BufferReader(joined[0].as_buffer()),
        read_options=pj.ReadOptions(block_size=max(1 << 20, 2 * longest + 2)),
        parse_options=pj.ParseOptions(explicit_schema=_TEMPLATE_SCHEMA,
                                      unexpected_field_behavior="ignore"))


# ------------------------------------------------------------------------ any value


def decode_value(value: bytes | None, run_id: str) -> dict:
    """One value's identity columns (``ts`` as ``ts_send``) and ``foreign``/``error``."""
    fields = None if value is None else parse_value(value)
    if value is None:
        error = NULL_VALUE
    elif fields is None or fields["v"] is None:
        error = NOT_FORMAT_1
    elif fields["v"] != RECORD_FORMAT_VERSION:
        error = f"unknown record format version {fields['v']}"
    elif any(fields[name] is None for name in _REQUIRED):
        error = MISSING
    elif fields["run"] != run_id:
        error = f"another run: {fields['run']}"
    else:
        return {"run": fields["run"], "pid": fields["pid"], "ses": fields["ses"],
                "p": fields["p"], "seq": fields["seq"], "txn": fields["txn"],
                "abort": bool(fields["abort"]), "ts_send": fields["ts"],
                "foreign": False, "error": None}
    return {"run": None, "pid": None, "ses": None, "p": None, "seq": None, "txn": None,
            "abort": None, "ts_send": None, "foreign": True, "error": error}


# ------------------------------------------------------------------------ the batch

_IDENTITY = {"run": pa.string(), "pid": pa.string(), "ses": pa.int32(), "p": pa.int32(),
             "seq": pa.int64(), "txn": pa.int64(), "abort": pa.bool_(),
             "ts_send": pa.int64(), "foreign": pa.bool_(), "error": pa.string()}


def _decoded_template(fields: pa.Table, run_id: str) -> dict[str, pa.Array]:
    """Identity columns of template rows (format 1 by construction; only the run can
    make them foreign)."""
    run = fields.column("run").combine_chunks()
    other = pc.not_equal(run, pa.scalar(run_id))
    if not pc.any(other).as_py():
        cols = {name: fields.column("ts" if name == "ts_send" else name).combine_chunks()
                for name in _IDENTITY if name not in ("foreign", "error")}
        cols["foreign"] = pa.repeat(pa.scalar(False), len(run))
        cols["error"] = pa.nulls(len(run), pa.string())
        return cols
    cols = {}
    for name, typ in _IDENTITY.items():
        if name in ("foreign", "error"):
            continue
        col = fields.column("ts" if name == "ts_send" else name).combine_chunks()
        cols[name] = pc.if_else(other, pa.nulls(len(run), typ), col)
    cols["foreign"] = other
    cols["error"] = pc.if_else(other, pc.binary_join_element_wise("another run: ", run, ""),
                               pa.nulls(len(run), pa.string()))
    return cols


def decode_batch(raw: pa.Table, run_id: str, isolation: str) -> pa.Table:
    """Observation columns (DECODED_COLUMNS, all but ``batch``/``observed_at``) of a
    collected :func:`raw_rows` batch."""
    n = raw.num_rows
    values = raw.column("value").combine_chunks()
    if n:
        template = pc.fill_null(pc.match_substring_regex(values, TEMPLATE), False)
    else:
        template = pa.array([], pa.bool_())
    fast = pc.indices_nonzero(template)
    if len(fast) == n:  # the usual batch: the generators' values only
        fields = _bulk(values) if n else _TEMPLATE_SCHEMA.empty_table()
    else:
        fields = _bulk(values.take(fast)) if len(fast) else _TEMPLATE_SCHEMA.empty_table()
    cols = _decoded_template(fields, run_id)
    if len(fast) < n:
        slow = pc.indices_nonzero(pc.invert(template))
        rows = [decode_value(v, run_id) for v in values.take(slow).to_pylist()]
        order = pc.sort_indices(pa.concat_arrays([fast, slow]))
        cols = {name: pa.concat_arrays([cols[name], pa.array([r[name] for r in rows], typ)])
                .take(order) for name, typ in _IDENTITY.items()}
    out = {
        "reader": pa.repeat(pa.scalar("spark"), n),
        "isolation": pa.repeat(pa.scalar(isolation), n),
        "topic": raw.column("topic"),
        "partition": raw.column("partition").cast(pa.int32()),
        "offset": raw.column("offset").cast(pa.int64()),
        **{k: cols[k] for k in ("run", "pid", "ses", "p", "seq", "txn", "abort", "ts_send")},
        "ts_broker": raw.column("ts_broker").cast(pa.int64()),
        "foreign": cols["foreign"],
        "error": cols["error"],
    }
    return pa.table(out)
