"""The names a pipeline file may set beside ``build`` (issue 46), checked before anything
starts, and the encoding of the records its ``make_record`` returns.

These names are a contract (users' files depend on them; docs/pipelines.md, "Your own
input"):

``INPUT = {"orders": 3, ...}``
    the topics the query reads and their partition counts. The tool creates them under
    the run's prefix (``<run>.in.orders``), writes the records there with its producers,
    and hands ``build`` a source frame whose ``topic`` column says ``orders``.
``def make_record(topic, i)``
    record *i* of ``topic``: a dict (a JSON value), bytes or str (the value as it is), or
    an envelope, a dict with ``value`` and any of ``key``, ``headers``, ``timestamp``
    (and nothing else). The same ``(topic, i)`` must give the same record: a producer's
    re-send writes record *i* again.
``ORACLE = "identity"`` with ``TRACE_COLUMN``
    an output column traces each input record: it holds the tool's identity (the value
    of a tool's record, or the ``verifier.id`` header of a user's record).
``ORACLE = "reference"`` with optional ``KEY_COLUMNS``, ``IGNORE_COLUMNS``
    the output is compared with the same query's output without faults: as a multiset of
    rows (no keys), or as the final state per key.

The defaults keep what pipelines did before: ``identity`` on the ``value`` column
(``VALUE_COLUMN``, the older name of ``TRACE_COLUMN``, is still read).
"""

from __future__ import annotations

import datetime as dt
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from verifier.rundata.errors import UsageError

#: the record header that carries a user's record's identity (the tool's record format 1
#: value, verifier.rundata.records): the readers decode it instead of the value
ID_HEADER = "verifier.id"
ORACLES = ("identity", "reference")
ENVELOPE = ("key", "value", "headers", "timestamp")
#: Kafka's topic names: at most 249 characters of [a-zA-Z0-9._-]; the run's prefix takes
#: room, so a user's name is kept short
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
#: records make_record is tried on before the run (each declared topic)
TRIED = (0, 1, 7)


class PipelineFileError(UsageError):
    """A pipeline file whose INPUT, make_record or oracle names break the contract."""


@dataclass(frozen=True)
class UserRecord:
    """One record as a producer sends it (the identity header is added by the sender)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class FileContract:
    """What a pipeline file declares beside ``build`` (defaults: the tool's records)."""

    inputs: dict[str, int]  # user topic -> partitions; empty: the run's own topics
    oracle: str = "identity"
    trace_column: str = "value"
    key_columns: tuple[str, ...] = ()
    ignore_columns: tuple[str, ...] = ()
    make_record: Callable[[str, int], Any] | None = None

    def to_json(self) -> dict:
        """The plan's entry (config.json ``pipelines.<name>``): plain names only."""
        return {"inputs": dict(self.inputs), "oracle": self.oracle,
                "trace_column": self.trace_column, "key_columns": list(self.key_columns),
                "ignore_columns": list(self.ignore_columns)}


def read_contract(module, where: str) -> FileContract:
    """The names ``module`` sets, each checked; ``where`` names it in the errors.
    ``make_record`` is called on a few records of each declared topic."""
    inputs = _inputs(getattr(module, "INPUT", None), where)
    make = getattr(module, "make_record", None)
    if inputs and make is None:
        raise PipelineFileError(f"{where}: INPUT is set but there is no make_record(topic, i)"
                                " to make its records")
    if make is not None and not inputs:
        raise PipelineFileError(f"{where}: make_record is set but INPUT is not: declare the "
                                "topics it makes records for, INPUT = {\"orders\": 3}")
    if make is not None:
        _check_signature(make, where)
        for topic in inputs:
            for i in TRIED:
                try:
                    record = make(topic, i)
                except Exception as exc:  # noqa: BLE001 - the user's code: say what broke
                    raise PipelineFileError(f"{where}: make_record({topic!r}, {i}) raised "
                                            f"{type(exc).__name__}: {exc}") from None
                encode_record(record, f"{where}: make_record({topic!r}, {i})")
    oracle = getattr(module, "ORACLE", "identity")
    if oracle not in ORACLES:
        raise PipelineFileError(f"{where}: ORACLE = {oracle!r}: expected one of "
                                f"{', '.join(repr(o) for o in ORACLES)}")
    trace = getattr(module, "TRACE_COLUMN", None) or getattr(module, "VALUE_COLUMN", None)
    keys = _names(getattr(module, "KEY_COLUMNS", ()), "KEY_COLUMNS", where)
    ignore = _names(getattr(module, "IGNORE_COLUMNS", ()), "IGNORE_COLUMNS", where)
    if oracle == "identity":
        if keys or ignore:
            raise PipelineFileError(f"{where}: KEY_COLUMNS and IGNORE_COLUMNS belong to "
                                    "ORACLE = \"reference\" (the identity oracle follows "
                                    "each record by TRACE_COLUMN)")
        if inputs and trace is None:
            raise PipelineFileError(
                f"{where}: ORACLE = \"identity\" with your own records needs TRACE_COLUMN, "
                f"the output column holding each record's {ID_HEADER!r} header; or set "
                "ORACLE = \"reference\" to compare with a fault-free run")
    elif trace is not None:
        raise PipelineFileError(f"{where}: TRACE_COLUMN belongs to ORACLE = \"identity\"")
    if set(keys) & set(ignore):
        raise PipelineFileError(f"{where}: {sorted(set(keys) & set(ignore))} are both in "
                                "KEY_COLUMNS and IGNORE_COLUMNS")
    if trace is not None and not isinstance(trace, str):
        raise PipelineFileError(f"{where}: TRACE_COLUMN must be a column name, not "
                                f"{type(trace).__name__}")
    return FileContract(inputs, oracle, trace or "value", keys, ignore, make)


def _inputs(value, where: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not value:
        raise PipelineFileError(f"{where}: INPUT must be a dict of topic name -> partition "
                                f"count, e.g. {{\"orders\": 3}}, not {value!r}")
    out = {}
    for topic, parts in value.items():
        if not isinstance(topic, str) or not _TOPIC.match(topic):
            raise PipelineFileError(f"{where}: INPUT topic {topic!r}: 1-100 characters of "
                                    "letters, digits, '.', '_' and '-'")
        if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= 64:
            raise PipelineFileError(f"{where}: INPUT[{topic!r}] = {parts!r}: a partition "
                                    "count from 1 to 64")
        out[topic] = parts
    return out


def _check_signature(make, where: str) -> None:
    if not callable(make):
        raise PipelineFileError(f"{where}: make_record is not a function")
    try:
        inspect.signature(make).bind("topic", 0)
    except TypeError:
        raise PipelineFileError(f"{where}: make_record must take (topic, i)") from None
    except ValueError:  # a builtin without a signature: the calls below tell
        pass


def _names(value, what: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value or ()):
        raise PipelineFileError(f"{where}: {what} must be a list of column names, not "
                                f"{value!r}")
    return tuple(dict.fromkeys(value or ()))


def encode_record(record, where: str = "make_record") -> UserRecord:
    """``make_record``'s return as the bytes a producer sends (PipelineFileError when it
    is none of the forms the contract allows)."""
    if isinstance(record, dict) and "value" in record and set(record) <= set(ENVELOPE):
        return UserRecord(
            key=_bytes(record.get("key"), f"{where}'s key", allow_none=True),
            value=_bytes(record["value"], f"{where}'s value", allow_none=True),
            headers=_headers(record.get("headers"), where),
            timestamp_ms=_timestamp(record.get("timestamp"), where))
    return UserRecord(key=None, value=_bytes(record, where, allow_none=False))


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


def input_topic(run_id: str, topic: str) -> str:
    """Where a declared topic lives on the cluster: under the run's prefix."""
    return f"{run_id}.in.{topic}"


def record_index(p: int, seq: int, partitions: int) -> int:
    """The ``i`` of make_record for the generator's record ``(p, seq)``: dense over the
    topic's partitions (record i goes to partition i mod n), the same on a re-send."""
    return seq * partitions + p


__all__ = ["ENVELOPE", "ID_HEADER", "ORACLES", "FileContract", "PipelineFileError",
           "UserRecord", "encode_record", "input_topic", "read_contract", "record_index"]
