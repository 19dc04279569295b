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
    re-send writes record *i* again (encoded by verifier.rundata.record_encoding).
``SAMPLES = "orders.jsonl"`` with optional ``VARY = ["order_id"]``
    instead of ``make_record``: a file of sample records (JSON lines, relative to the
    pipeline file) the tool varies: record *i* is sample ``i mod n`` (verifier.rundata.
    samples says how it varies).
``ID_FIELD = "verifier_id"``
    the top-level field of each record's JSON value the producer writes its identity
    into (as a string; the ``verifier.id`` header stays).
``ORACLE = "identity"`` with ``TRACE_COLUMN``
    an output column traces each input record: it holds the tool's identity (the value
    of a tool's record, or the ``verifier.id`` header or the ID_FIELD of a user's
    record).
``ORACLE = "reference"`` with optional ``KEY_COLUMNS``, ``IGNORE_COLUMNS``
    the output is compared with the same query's output without faults: as a multiset of
    rows (no keys), or as the final state per key.

The defaults keep what pipelines did before: ``identity`` on the ``value`` column
(``VALUE_COLUMN``, the older name of ``TRACE_COLUMN``, is still read).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier.rundata.record_encoding import (
    ENVELOPE,
    ID_HEADER,
    PipelineFileError,
    UserRecord,
    encode_record,
)
from verifier.rundata.samples import load_samples

ORACLES = ("identity", "reference")
#: Kafka's topic names: at most 249 characters of [a-zA-Z0-9._-]; the run's prefix takes
#: room, so a user's name is kept short
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
#: records make_record is tried on before the run (each declared topic)
TRIED = (0, 1, 7)
#: a field name ID_FIELD may give (a top-level JSON field, addressable as $.name)
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


@dataclass(frozen=True)
class FileContract:
    """What a pipeline file declares beside ``build`` (defaults: the tool's records)."""

    inputs: dict[str, int]  # user topic -> partitions; empty: the run's own topics
    oracle: str = "identity"
    trace_column: str = "value"
    key_columns: tuple[str, ...] = ()
    ignore_columns: tuple[str, ...] = ()
    make_record: Callable[[str, int], Any] | None = None  # or the SAMPLES file's
    id_field: str | None = None  # the value's field that carries the identity

    def to_json(self) -> dict:
        """The plan's entry (config.json ``pipelines.<name>``): plain names only."""
        return {"inputs": dict(self.inputs), "oracle": self.oracle,
                "trace_column": self.trace_column, "key_columns": list(self.key_columns),
                "ignore_columns": list(self.ignore_columns),
                **({"id_field": self.id_field} if self.id_field else {})}

    def encode(self, topic: str, i: int, identity: bytes = b"") -> UserRecord:
        """Record ``i`` of ``topic`` as its producer sends it, with ``identity`` in the
        ID_FIELD when the file names one."""
        return encode_record(self.make_record(topic, i), f"make_record({topic!r}, {i})",
                             self.id_field, identity)


def read_contract(module, where: str) -> FileContract:
    """The names ``module`` sets, each checked; ``where`` names it in the errors.
    ``make_record`` is called on a few records of each declared topic; a ``SAMPLES`` file
    is read and each of its lines checked."""
    inputs = _inputs(getattr(module, "INPUT", None), where)
    make, id_field = _records(module, inputs, where)
    oracle, trace, keys, ignore = _oracle(module, inputs, id_field, where)
    return FileContract(inputs, oracle, trace or "value", keys, ignore, make, id_field)


def _records(module, inputs: dict[str, int], where: str):
    """(make_record or the SAMPLES file's, ID_FIELD) of the file, checked."""
    make = getattr(module, "make_record", None)
    samples = getattr(module, "SAMPLES", None)
    vary = getattr(module, "VARY", None)
    id_field = getattr(module, "ID_FIELD", None)
    if make is not None and samples is not None:
        raise PipelineFileError(f"{where}: both SAMPLES and make_record are set: the "
                                "records come from one of them")
    if vary is not None and samples is None:
        raise PipelineFileError(f"{where}: VARY names the fields the tool varies in the "
                                "records of SAMPLES, and SAMPLES is not set")
    given = "make_record" if make is not None else "SAMPLES" if samples is not None else None
    if inputs and given is None:
        raise PipelineFileError(f"{where}: INPUT is set but there is no make_record(topic, i)"
                                " or SAMPLES file to make its records")
    if given is not None and not inputs:
        raise PipelineFileError(f"{where}: {given} is set but INPUT is not: declare the "
                                "topics it makes records for, INPUT = {\"orders\": 3}")
    if id_field is not None and (not isinstance(id_field, str) or not _FIELD.match(id_field)):
        raise PipelineFileError(f"{where}: ID_FIELD = {id_field!r}: the name of a top-level "
                                "field of your JSON value (letters, digits, '_')")
    if id_field is not None and not inputs:
        raise PipelineFileError(f"{where}: ID_FIELD writes each record's identity into "
                                "your own records: it needs INPUT with make_record or "
                                "SAMPLES (the tool's own records carry it in their value)")
    if samples is not None:
        file = getattr(module, "__file__", None)
        make = load_samples(samples, vary, list(inputs), Path(file).parent if file else None,
                            where, id_field)
    elif make is not None:
        _check_signature(make, where)
    for topic in inputs if make is not None else ():
        for i in TRIED:
            try:
                record = make(topic, i)
            except Exception as exc:  # noqa: BLE001 - the user's code: say what broke
                raise PipelineFileError(f"{where}: make_record({topic!r}, {i}) raised "
                                        f"{type(exc).__name__}: {exc}") from None
            encode_record(record, f"{where}: make_record({topic!r}, {i})", id_field, b"")
    return make, id_field


def _oracle(module, inputs: dict[str, int], id_field: str | None, where: str):
    """(ORACLE, TRACE_COLUMN or None, KEY_COLUMNS, IGNORE_COLUMNS), checked together: an
    identity oracle whose output cannot carry identities is refused here when the file
    alone says so."""
    oracle = getattr(module, "ORACLE", "identity")
    if oracle not in ORACLES:
        raise PipelineFileError(f"{where}: ORACLE = {oracle!r}: expected one of "
                                f"{', '.join(repr(o) for o in ORACLES)}")
    new, old = getattr(module, "TRACE_COLUMN", None), getattr(module, "VALUE_COLUMN", None)
    if new is not None and old is not None and new != old:
        raise PipelineFileError(f"{where}: TRACE_COLUMN = {new!r} and VALUE_COLUMN = {old!r}"
                                " (its older name) disagree: set TRACE_COLUMN only")
    trace = new if new is not None else old
    named = "TRACE_COLUMN" if new is not None else "VALUE_COLUMN"
    keys = _names(getattr(module, "KEY_COLUMNS", ()), "KEY_COLUMNS", where)
    ignore = _names(getattr(module, "IGNORE_COLUMNS", ()), "IGNORE_COLUMNS", where)
    if oracle == "identity":
        if keys or ignore:
            raise PipelineFileError(f"{where}: KEY_COLUMNS and IGNORE_COLUMNS belong to "
                                    "ORACLE = \"reference\" (the identity oracle follows "
                                    "each record by TRACE_COLUMN)")
        if inputs and trace is None:
            carried = (f"the value's field {id_field!r} (ID_FIELD)" if id_field else
                       f"the {ID_HEADER!r} header")
            raise PipelineFileError(
                f"{where}: ORACLE = \"identity\" with your own records needs TRACE_COLUMN, "
                f"the output column holding each record's identity: {carried}; or set "
                "ORACLE = \"reference\" to compare with a fault-free run")
    elif trace is not None:
        raise PipelineFileError(f"{where}: {named} belongs to ORACLE = \"identity\" (the "
                                "reference oracle compares whole rows: no column traces "
                                "a record)")
    if set(keys) & set(ignore):
        raise PipelineFileError(f"{where}: {sorted(set(keys) & set(ignore))} are both in "
                                "KEY_COLUMNS and IGNORE_COLUMNS")
    if trace is not None and (not isinstance(trace, str) or not trace):
        raise PipelineFileError(f"{where}: {named} must be a column name, not {trace!r}")
    return oracle, trace, keys, ignore


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


def input_topic(run_id: str, topic: str) -> str:
    """Where a declared topic lives on the cluster: under the run's prefix."""
    return f"{run_id}.in.{topic}"


def record_index(p: int, seq: int, partitions: int) -> int:
    """The ``i`` of make_record for the generator's record ``(p, seq)``: dense over the
    topic's partitions (record i goes to partition i mod n), the same on a re-send."""
    return seq * partitions + p


__all__ = ["ENVELOPE", "ID_HEADER", "ORACLES", "TRIED", "FileContract", "PipelineFileError",
           "UserRecord", "encode_record", "input_topic", "read_contract", "record_index"]
