"""A pipeline's output rows and its fault-free reference runs in a run folder (issue 46;
docs/formats.md §8).

    RUN/pipelines/<name>/rows.parquet              the output's rows as written (every
                                                   column, and ``__order``: read order)
    RUN/pipelines/<name>/reference-<k>/            the k-th fault-free run (k = 1, 2):
        checkpoint/  output/  rows.parquet         its own checkpoint, output and rows
    RUN/pipelines/<name>/reference.json            how they went: seconds, rows, errors

Written by the pipeline's driver after its faulted query stopped (streaming.pipelines.
reference), read by the reference oracle (verifier.judge.pipeline_reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from verifier.rundata.formats import RunFormatError, read_json, write_json
from verifier.rundata.pipelines import PipelineLayout

REFERENCE_FORMAT = "pipeline-reference"
#: the fault-free runs: the second finds the columns that vary between runs
RUNS = (1, 2)


@dataclass(frozen=True)
class ReferenceLayout:
    """Where one pipeline's rows and reference runs are."""

    where: PipelineLayout

    @property
    def rows(self) -> Path:
        return self.where.root / "rows.parquet"

    def run(self, k: int) -> Path:
        return self.where.root / f"reference-{k}"

    def checkpoint(self, k: int) -> Path:
        return self.run(k) / "checkpoint"

    def output(self, k: int) -> Path:
        return self.run(k) / "output"

    def run_rows(self, k: int) -> Path:
        return self.run(k) / "rows.parquet"

    @property
    def info(self) -> Path:
        return self.where.root / "reference.json"


def write_rows(path: Path, rows: pa.Table) -> None:
    """Rows as Parquet, whole or not at all (a temporary file renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(rows, tmp)
    tmp.replace(path)


def read_rows(path: Path) -> pa.Table:
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise RunFormatError(path, f"unreadable: {exc}") from None


def write_info(layout: ReferenceLayout, info: dict) -> None:
    write_json(layout.info, REFERENCE_FORMAT, info)


def read_info(layout: ReferenceLayout) -> dict:
    return read_json(layout.info, REFERENCE_FORMAT)


__all__ = ["REFERENCE_FORMAT", "RUNS", "ReferenceLayout", "read_info", "read_rows",
           "write_info", "write_rows"]
