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

**What a value means** is what Spark's ``from_json`` with ``SPARK_VALUE_SCHEMA`` made of it
(Spark 4 defaults: PERMISSIVE with partial results, Jackson with single quotes and
NaN/Infinity allowed), the definition the observations had before decoding moved to the
driver. :func:`parse_value` states it for any value; tests/unit/streaming/test_decode.py
compares it with ``from_json`` on malformed and foreign values. In short: the value is
read as UTF-8 (bad bytes become U+FFFD); anything after the top-level object is ignored;
a syntax error anywhere in the object makes the whole value unreadable; a field of the
wrong type is null, or keeps the value an earlier duplicate of the key gave it (the last
well-typed duplicate wins, a null overrides); a string field given a number, boolean,
object or array holds that value re-written as compact JSON (numbers as Java prints a
double); keys are case-sensitive, unknown keys ignored.

One known difference: after a syntax error *inside the value of* ``run`` or ``pid`` (a
raw control character in the string, a broken object or array given to it), Spark's
parser counts a bad field and resumes somewhere in the middle of that value, so its row
depends on where it resumed (mostly ``missing or bad field``, sometimes an unreadable
value); here such a value is unreadable (``not a format 1 record``). Foreign both ways
on every case seen (a few in a hundred random 1-3 byte edits of record values).

Two ways to one result: values written by the generators' template
(verifier.rundata.records.encode_values: the keys in order, plain ASCII strings, numbers
in range, optional ``x`` padding) are decoded in bulk (a regular expression checks the
template, pyarrow's JSON reader reads the fields); every other value goes through
:func:`parse_value`. The tests check that both give the same rows on template values.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from verifier.rundata.records import RECORD_FORMAT_VERSION, SPARK_VALUE_SCHEMA

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

_KINDS = {"INT": "int", "BIGINT": "long", "STRING": "str", "BOOLEAN": "bool"}
#: The value's fields and their types, from SPARK_VALUE_SCHEMA (the record format's one
#: statement of them, beside the encoder).
FIELDS = {name: _KINDS[typ] for name, typ in (f.split() for f in SPARK_VALUE_SCHEMA.split(","))}
#: Fields a format 1 value must carry (``txn`` may be null, ``abort`` defaults to false).
_REQUIRED = ("run", "pid", "ses", "p", "seq", "ts")

NOT_FORMAT_1 = "not a format 1 record: not JSON, not an object, or no version"
NULL_VALUE = "null value"
MISSING = "missing or bad field"

_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_ARROW = {"int": pa.int32(), "long": pa.int64(), "str": pa.string(), "bool": pa.bool_()}


def raw_rows(kafka_rows: DataFrame) -> DataFrame:
    """The Kafka source's columns the observation rows need, undecoded (RAW_COLUMNS)."""
    from pyspark.sql import functions as F

    return kafka_rows.select(
        F.col("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.expr("unix_millis(timestamp)").alias("ts_broker"),
        F.col("value"),
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


class _Unreadable(Exception):
    """The value is not JSON as Spark reads it (the whole value is unreadable)."""


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t", "'": "'"}
_LITERALS = (("true", ("bool", True)), ("false", ("bool", False)), ("null", ("null", None)),
             ("NaN", ("float", math.nan)), ("Infinity", ("float", math.inf)),
             ("+Infinity", ("float", math.inf)), ("-Infinity", ("float", -math.inf)),
             ("+INF", ("float", math.inf)), ("-INF", ("float", -math.inf)))
_DIGITS = "0123456789"


class _Reader:
    """A JSON reader with the leniencies of Spark's Jackson parser: single-quoted strings
    and names, NaN/Infinity; nothing else (no comments, no leading zeros, no trailing
    commas, no unescaped control characters). Values come back as (kind, python value)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def ws(self, i: int) -> int:
        text = self.text
        while i < len(text) and text[i] in " \t\n\r":
            i += 1
        return i

    def char(self, i: int) -> str:
        if i >= len(self.text):
            raise _Unreadable
        return self.text[i]

    def value(self, i: int) -> tuple[tuple, int]:
        c = self.char(i)
        if c == "{":
            return self.object(i)
        if c == "[":
            items: list = []
            i = self.ws(i + 1)
            if self.char(i) == "]":
                return ("arr", items), i + 1
            while True:
                item, i = self.value(self.ws(i))
                items.append(item)
                i = self.ws(i)
                c = self.char(i)
                if c == "]":
                    return ("arr", items), i + 1
                if c != ",":
                    raise _Unreadable
                i += 1
        if c in "\"'":
            s, i = self.string(i)
            return ("str", s), i
        if c == "-" or c in _DIGITS:
            number = self.number(i)
            if number is not None:
                return number
        for word, node in _LITERALS:
            if self.text.startswith(word, i):
                end = i + len(word)
                if end < len(self.text) and (self.text[end].isalnum() or self.text[end] == "_"):
                    raise _Unreadable
                return node, end
        raise _Unreadable

    def object(self, i: int) -> tuple[tuple, int]:
        pairs: list = []
        i = self.ws(i + 1)
        if self.char(i) == "}":
            return ("obj", pairs), i + 1
        while True:
            if self.char(i) not in "\"'":
                raise _Unreadable
            name, i = self.string(i)
            i = self.ws(i)
            if self.char(i) != ":":
                raise _Unreadable
            item, i = self.value(self.ws(i + 1))
            pairs.append((name, item))
            i = self.ws(i)
            c = self.char(i)
            if c == "}":
                return ("obj", pairs), i + 1
            if c != ",":
                raise _Unreadable
            i = self.ws(i + 1)

    def string(self, i: int) -> tuple[str, int]:
        text, quote, out = self.text, self.text[i], []
        i += 1
        while True:
            c = self.char(i)
            if c == quote:
                return "".join(out), i + 1
            if c < " ":
                raise _Unreadable
            if c == "\\":
                e = self.char(i + 1)
                if e == "u":
                    digits = text[i + 2:i + 6]
                    if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                        raise _Unreadable
                    out.append(chr(int(digits, 16)))
                    i += 6
                    continue
                if e not in _ESCAPES:
                    raise _Unreadable
                out.append(_ESCAPES[e])
                i += 2
                continue
            out.append(c)
            i += 1

    def number(self, i: int) -> tuple[tuple, int] | None:
        """A number at ``i``; None when ``-`` starts a word (``-Infinity``, ``-INF``)."""
        text, start = self.text, i
        if text[i] == "-":
            i += 1
            if i < len(text) and text[i] not in _DIGITS:
                return None
        j = i
        while i < len(text) and text[i] in _DIGITS:
            i += 1
        if i == j or (text[j] == "0" and i - j > 1):
            raise _Unreadable  # no digits, or a leading zero
        is_float = False
        if i < len(text) and text[i] == ".":
            is_float, j = True, i + 1
            i = j
            while i < len(text) and text[i] in _DIGITS:
                i += 1
            if i == j:
                raise _Unreadable
        if i < len(text) and text[i] in "eE":
            is_float = True
            i += 1
            if i < len(text) and text[i] in "+-":
                i += 1
            j = i
            while i < len(text) and text[i] in _DIGITS:
                i += 1
            if i == j:
                raise _Unreadable
        raw = text[start:i]
        return (("float", float(raw)) if is_float else ("int", int(raw))), i


def _java_double(x: float) -> str:
    """``Double.toString(x)`` (finite ``x``): the shortest digits, in Java's layout."""
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    d = Decimal(repr(abs(x)))
    if 1e-3 <= abs(x) < 1e7:
        plain = format(d, "f")
        if "." not in plain:
            plain += ".0"
        head, _, tail = plain.partition(".")
        return f"{sign}{head}.{tail.rstrip('0') or '0'}"
    t = d.as_tuple()
    digits = "".join(map(str, t.digits))
    exponent = len(digits) + t.exponent - 1
    digits = digits.rstrip("0") or "0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _json_string(s: str) -> str:
    out = []
    for c in s:
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif c < " ":
            short = {"\b": "b", "\t": "t", "\n": "n", "\f": "f", "\r": "r"}.get(c)
            out.append("\\" + short if short else f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _compact(node: tuple) -> str:
    """A JSON value as Spark's string field holds it (Jackson's generator, compact)."""
    kind, value = node
    if kind == "str":
        return _json_string(value)
    if kind == "int":
        return str(value)
    if kind == "float":
        if math.isnan(value):
            return '"NaN"'
        if math.isinf(value):
            return '"Infinity"' if value > 0 else '"-Infinity"'
        return _java_double(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "null":
        return "null"
    if kind == "arr":
        return "[" + ",".join(_compact(item) for item in value) + "]"
    return "{" + ",".join(f"{_json_string(k)}:{_compact(v)}" for k, v in value) + "}"


def _java_text(s: str) -> str:
    """A Java string's UTF-8 bytes, back as text: surrogate pairs joined, a lone
    surrogate becomes ``?``."""
    if not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    joined = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined.encode("utf-8", "replace").decode("utf-8")


_WRONG_TYPE = object()


def _field(kind: str, node: tuple):
    """The field's value as Spark converts it; ``_WRONG_TYPE`` when it cannot."""
    if node[0] == "null":
        return None
    if kind == "str":
        return _java_text(node[1] if node[0] == "str" else _compact(node))
    if kind == "bool":
        return node[1] if node[0] == "bool" else _WRONG_TYPE
    low, high = _RANGE[kind]
    if node[0] == "int" and low <= node[1] <= high:
        return node[1]
    return _WRONG_TYPE


def parse_value(value: bytes) -> dict | None:
    """The value's fields (FIELDS; absent ones None) as ``from_json`` with
    SPARK_VALUE_SCHEMA reads them, or None when it cannot read the value at all."""
    reader = _Reader(value.decode("utf-8", "replace"))
    try:
        i = reader.ws(0)
        if reader.char(i) != "{":
            return None
        (_, pairs), _end = reader.object(i)
    except _Unreadable:
        return None
    fields = dict.fromkeys(FIELDS)
    for name, node in pairs:
        kind = FIELDS.get(name)
        if kind is not None:
            got = _field(kind, node)
            if got is not _WRONG_TYPE:
                fields[name] = got
    return fields


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
