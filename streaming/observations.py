"""Observation format 1 (docs/formats.md §4): schema, layout, atomic writes, reading.

One row per record a reader received. The Spark observer and the plain kafka-python
reader write the same schema under ``RUN/observations/<reader>/<isolation>/``; both write
whole Parquet files atomically (a temporary name, then ``os.replace``), so a reader never
sees half a file. Temporary names start with ``.``, which Parquet readers skip.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from verifier.rundata.errors import UsageError
from verifier.rundata.formats import (  # noqa: F401 - write_json_atomic: re-exported
    read_json,
    write_json,
    write_json_atomic,
)
from verifier.rundata.layout import layout
from verifier.rundata.records import UndecodableRecord, decode_value
from verifier.rundata.vocab import ISOLATIONS as ISOLATION_LEVELS
from verifier.rundata.vocab import READERS

OBSERVATIONS_FORMAT = "observations"

#: The observation schema. Types are part of the contract: int32 for partition/ses/p,
#: int64 for offsets, sequence numbers, transaction numbers and times (ms).
SCHEMA = pa.schema([
    ("reader", pa.string()),
    ("isolation", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("run", pa.string()),
    ("pid", pa.string()),
    ("ses", pa.int32()),
    ("p", pa.int32()),
    ("seq", pa.int64()),
    ("txn", pa.int64()),
    ("abort", pa.bool_()),
    ("ts_send", pa.int64()),
    ("ts_broker", pa.int64()),
    ("batch", pa.int64()),
    ("observed_at", pa.int64()),
    ("foreign", pa.bool_()),
    ("error", pa.string()),
])  # fmt: skip

#: Identity columns: null on a foreign row.
IDENTITY_COLUMNS = ("run", "pid", "ses", "p", "seq", "txn", "abort", "ts_send")


def output_dir(run_dir: Path, reader: str, isolation: str) -> Path:
    """Where ``reader`` writes its rows for ``isolation``."""
    if reader not in READERS or isolation not in ISOLATION_LEVELS:
        raise UsageError(f"unknown reader/isolation {reader!r}/{isolation!r}")
    return layout(run_dir).observations_of(reader, isolation)


def write_format_file(run_dir: Path) -> Path:
    """Write ``RUN/observations/_format.json`` (idempotent)."""
    return write_json(layout(run_dir).observations_format, OBSERVATIONS_FORMAT, {})


def check_format(run_dir: Path) -> None:
    """Reject observations of an unknown format or version, naming the file."""
    read_json(layout(run_dir).observations_format, OBSERVATIONS_FORMAT)


def write_table_atomic(table: pa.Table, path: Path) -> None:
    """Write one Parquet file under its final name in one step (replacing any old one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    pq.write_table(table.cast(SCHEMA), tmp)
    os.replace(tmp, path)


def read_observations(run_dir: Path, reader: str, isolation: str) -> pa.Table:
    """Every row ``reader`` wrote at ``isolation`` (empty table if it wrote none)."""
    check_format(run_dir)
    files = sorted(output_dir(run_dir, reader, isolation).glob("[!._]*.parquet"))
    if not files:
        return SCHEMA.empty_table()
    return pa.concat_tables(pq.read_table(f, schema=SCHEMA) for f in files)


def decode_row(run_id: str, value: bytes | None) -> dict:
    """The identity columns and ``foreign``/``error`` of one record value (plain reader).

    The Spark observer computes the same columns in Spark (``streaming.decode``); both
    flag a value foreign when it does not decode as record format 1 or names another run.
    """
    try:
        rid = decode_value(value)
    except UndecodableRecord as exc:
        return _foreign(str(exc))
    if rid.run != run_id:
        return _foreign(f"another run: {rid.run!r}")
    return {"run": rid.run, "pid": rid.pid, "ses": rid.ses, "p": rid.p, "seq": rid.seq,
            "txn": rid.txn, "abort": rid.abort, "ts_send": rid.ts,
            "foreign": False, "error": None}


def _foreign(reason: str) -> dict:
    return {**dict.fromkeys(IDENTITY_COLUMNS), "foreign": True, "error": reason}
