"""An aggregating application's output as a state per key, and its fault-free reference
run, in a run folder (issue 47; docs/applications.md "The stateful Streams presets").

    RUN/apps/<name>/state-<iso>.parquet      its output topic read back at <iso>: every
                                             record's key and value (as text) in read order
    RUN/apps/<name>/reference/state.parquet  the reference run's output, read_committed
    RUN/apps/<name>/reference.json           how the reference run went: seconds, rows,
                                             its group's committed offsets, an error

Written by verifier.orchestration.app_reference after the drain, read by the reference
oracle of applications (verifier.judge.app_reference). The rows carry the pipelines'
order column (verifier.judge.reference.ORDER), so the last row of a key is its final state.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from verifier.rundata.apps import AppLayout, group_id, output_topic
from verifier.rundata.formats import read_json, write_json
from verifier.rundata.reference_runs import read_rows, write_rows

REFERENCE_FORMAT = "app-reference"
#: the read order column, the pipelines' reference oracle's (verifier.judge.reference)
ORDER = "__order"
#: a keyed output record: the key and value as text, where it was, its read order
STATE_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string()),
                          ("out_partition", pa.int32()), ("out_offset", pa.int64()),
                          (ORDER, pa.int64())])
#: the columns compared: a key's final value (the rest says where it was)
COMPARED = ("key", "value")
#: the reference run's name: its group and output topic carry the run's prefix as well
SUFFIX = "reference"


def reference_group(run_id: str, name: str) -> str:
    return group_id(run_id, f"{name}.{SUFFIX}")


def reference_output(run_id: str, name: str) -> str:
    return output_topic(run_id, f"{name}.{SUFFIX}")


def state_path(where: AppLayout, isolation: str) -> Path:
    return where.root / f"state-{isolation}.parquet"


def reference_state_path(where: AppLayout) -> Path:
    return where.root / SUFFIX / "state.parquet"


def info_path(where: AppLayout) -> Path:
    return where.root / f"{SUFFIX}.json"


def state_table(rows: list[dict]) -> pa.Table:
    """Records (``key``, ``value``, ``out_partition``, ``out_offset``) as a state table,
    ordered by partition and offset: a key's records are in one partition, in order."""
    rows = sorted(rows, key=lambda r: (r["out_partition"], r["out_offset"]))
    return pa.Table.from_pylist([{**r, ORDER: i} for i, r in enumerate(rows)],
                                schema=STATE_SCHEMA)


def write_state(path: Path, table: pa.Table) -> None:
    write_rows(path, table.cast(STATE_SCHEMA))


def read_state(path: Path) -> pa.Table:
    return read_rows(path).cast(STATE_SCHEMA)


def write_info(where: AppLayout, info: dict) -> None:
    write_json(info_path(where), REFERENCE_FORMAT, info)


def read_info(where: AppLayout) -> dict:
    return read_json(info_path(where), REFERENCE_FORMAT)


__all__ = ["COMPARED", "ORDER", "REFERENCE_FORMAT", "STATE_SCHEMA", "SUFFIX", "info_path",
           "read_info", "read_state", "reference_group", "reference_output",
           "reference_state_path", "state_path", "state_table", "write_info", "write_state"]
