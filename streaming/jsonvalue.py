"""What Spark's ``from_json`` with ``SPARK_VALUE_SCHEMA`` makes of a record value.

The observations were decoded in Spark with ``from_json`` (Spark 4 defaults: PERMISSIVE
with partial results, Jackson with single quotes and NaN/Infinity allowed) until decoding
moved to the driver (streaming.decode); :func:`parse_value` keeps that definition for any
value. tests/unit/streaming/test_decode.py compares it with ``from_json`` on malformed and
foreign values. In short: the value is read as UTF-8 (bad bytes become U+FFFD); anything
after the top-level object is ignored; a syntax error anywhere in the object makes the
whole value unreadable; a field of the wrong type is null, or keeps the value an earlier
duplicate of the key gave it (the last well-typed duplicate wins, a null overrides); a
string field given a number, boolean, object or array holds that value re-written as
compact JSON (numbers as Java prints a double); keys are case-sensitive, unknown keys
ignored.

One known difference: after a syntax error *inside the value of* ``run`` or ``pid`` (a
raw control character in the string, a broken object or array given to it), Spark's
parser counts a bad field and resumes somewhere in the middle of that value, so its row
depends on where it resumed (mostly ``missing or bad field``, sometimes an unreadable
value); here such a value is unreadable (``not a format 1 record``). Foreign both ways
on every case seen (a few in a hundred random 1-3 byte edits of record values).
"""

from __future__ import annotations

import math
from decimal import Decimal

from verifier.rundata.records import SPARK_VALUE_SCHEMA

_KINDS = {"INT": "int", "BIGINT": "long", "STRING": "str", "BOOLEAN": "bool"}
#: The value's fields and their types, from SPARK_VALUE_SCHEMA (the record format's one
#: statement of them, beside the encoder).
FIELDS = {name: _KINDS[typ] for name, typ in (f.split() for f in SPARK_VALUE_SCHEMA.split(","))}
_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


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
