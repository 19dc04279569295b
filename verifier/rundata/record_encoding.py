"""A user's record as a producer sends it (issue 46): what ``make_record`` (or a line of
a ``SAMPLES`` file) returns, encoded to Kafka's key, value, headers and timestamp, with
the record's identity where the pipeline file says (``ID_FIELD``).

The forms (docs/pipelines.md, "The names"): a dict or list (a JSON value), bytes or str
(the value as is), or an *envelope*: a dict with ``value`` and any of ``key``,
``headers``, ``timestamp`` and nothing else.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import orjson

from verifier.rundata.errors import UsageError

#: the record header that carries a user's record's identity (the tool's record format 1
#: value, verifier.rundata.records): the readers decode it instead of the value
ID_HEADER = "verifier.id"
ENVELOPE = ("key", "value", "headers", "timestamp")


class PipelineFileError(UsageError):
    """A pipeline file whose INPUT, make_record, SAMPLES or oracle names break the
    contract."""


@dataclass(frozen=True)
class UserRecord:
    """One record as a producer sends it (the identity header is added by the sender)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int | None = None


def is_envelope(record) -> bool:
    """A dict with ``value`` and nothing but ``key``, ``headers``, ``timestamp`` beside."""
    return isinstance(record, dict) and "value" in record and set(record) <= set(ENVELOPE)


def encode_record(record, where: str = "make_record", id_field: str | None = None,
                  identity: bytes | None = None) -> UserRecord:
    """``make_record``'s return as the bytes a producer sends (PipelineFileError when it
    is none of the forms the contract allows). With ``id_field``, ``identity`` (the
    tool's value, format 1) is written into that top-level field of the value, which
    must then be a JSON object (a dict, or bytes/str holding one) without that field."""
    envelope = is_envelope(record)
    value = record["value"] if envelope else record
    if id_field is not None:
        value = with_id_field(value, id_field, identity or b"", where)
    if envelope:
        return UserRecord(
            key=_bytes(record.get("key"), f"{where}'s key", allow_none=True),
            value=_bytes(value, f"{where}'s value", allow_none=True),
            headers=_headers(record.get("headers"), where),
            timestamp_ms=_timestamp(record.get("timestamp"), where))
    return UserRecord(key=None, value=_bytes(value, where, allow_none=False))


def with_id_field(value, field: str, identity: bytes, where: str) -> dict:
    """A copy of the JSON object ``value`` with ``field`` = the identity's text (format 1
    is plain ASCII JSON, so the field holds a string your schema reads as a string)."""
    obj = value
    if isinstance(value, bytes | bytearray | str):
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError:
            obj = None
    if not isinstance(obj, dict):
        raise PipelineFileError(
            f"{where}: ID_FIELD = {field!r} needs a JSON object value to write the "
            f"record's identity into, not {type(value).__name__} {value!r:.60}")
    if field in obj:
        raise PipelineFileError(
            f"{where}: the value already has a field {field!r}; ID_FIELD names the field "
            "the tool writes each record's identity into: name one your records do not "
            "have")
    return {**obj, field: identity.decode()}


def _bytes(value, where: str, allow_none: bool) -> bytes | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict | list):
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError as exc:
            raise PipelineFileError(f"{where}: not JSON-serialisable: {exc}") from None
    raise PipelineFileError(f"{where} returned {type(value).__name__} {value!r:.80}: "
                            "expected a dict (JSON), bytes, str, or a dict with 'value' and "
                            "any of 'key', 'headers', 'timestamp'")


def _headers(value, where: str) -> tuple[tuple[str, bytes], ...]:
    if value is None:
        return ()
    items = value.items() if isinstance(value, dict) else value
    out = []
    try:
        for k, v in items:
            if not isinstance(k, str):
                raise TypeError(k)
            if k == ID_HEADER:
                raise PipelineFileError(f"{where}: header {ID_HEADER!r} is the tool's (it "
                                        "carries the record's identity)")
            out.append((k, _bytes(v, f"{where}'s header {k!r}", allow_none=False)))
    except (TypeError, ValueError):
        raise PipelineFileError(f"{where}'s headers: a dict of name -> bytes or str, or a "
                                "list of (name, value) pairs") from None
    return tuple(out)


def _timestamp(value, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise PipelineFileError(f"{where}'s timestamp: milliseconds since the epoch (int) or a "
                            f"datetime, not {value!r}")


__all__ = ["ENVELOPE", "ID_HEADER", "PipelineFileError", "UserRecord", "encode_record",
           "is_envelope", "with_id_field"]
