"""The observer's two ``foreachBatch`` sinks: exactly-once and a deliberately naive one.

Both collect the batch's raw Kafka rows to the driver as Arrow, decode them there
(streaming.decode) and write one Parquet file per batch under
``RUN/observations/spark/<isolation>/``, atomically. Writing on the driver
keeps the run directory on the machine that owns the run, also with a remote master.

- ``exactly-once``: the file is named by the batch id alone. Spark re-runs an uncommitted
  batch after a restart with the same id and offset range, so the replay *replaces* the
  file: every offset is written once.
- ``at-least-once``: every invocation writes a new file (batch id + a random suffix), as a
  naive append sink does. A replayed batch is written twice, which users can then see as
  delivery duplicates.

After the file is in place the live checks judge the batch (streaming.live: anomalies in
``RUN/anomalies/<isolation>/``, their state beside the checkpoint), then the sink replaces
the progress file (streaming.progress). The checks never change what is recorded.
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from streaming.decode import decode_batch
from streaming.observations import SCHEMA, output_dir, write_table_atomic
from streaming.progress import Progress, now_ms, write_progress
from verifier.rundata.checkpoint import Offsets, planned_end_offsets

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from streaming.live import LiveSink

log = logging.getLogger(__name__)

SINKS = ("exactly-once", "at-least-once")


class BatchSink:
    """A ``foreachBatch`` function for one query (one isolation level)."""

    def __init__(self, run_dir: Path, isolation: str, checkpoint: Path, mode: str,
                 run_id: str, written: Offsets | None = None, hold_after_write_ms: int = 0,
                 rows: int = 0, live: LiveSink | None = None) -> None:
        if mode not in SINKS:
            raise ValueError(f"unknown sink {mode!r}; one of {SINKS}")
        self.run_dir = Path(run_dir)
        self.isolation = isolation
        self.checkpoint = Path(checkpoint)
        self.mode = mode
        self.run_id = run_id  # records naming another run are foreign
        self.out = output_dir(self.run_dir, "spark", isolation)
        # Seeded from the previous incarnation's progress file, so "highest offset
        # written" survives a restart.
        self.written: Offsets = dict(written or {})
        self.rows = rows  # cumulative over observer processes, like ``written``
        self.hold_after_write_ms = hold_after_write_ms
        self.live = live  # None: recording only (--live-checks off)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        table = decode_batch(batch.toArrow(), self.run_id, self.isolation)
        observed_at = now_ms()
        n = table.num_rows
        if n:
            table = (table
                     .append_column("batch", pa.repeat(pa.scalar(batch_id, pa.int64()), n))
                     .append_column("observed_at",
                                    pa.repeat(pa.scalar(observed_at, pa.int64()), n))
                     .select(SCHEMA.names))
        name = self._file_name(batch_id) if n else None
        if name is not None:
            write_table_atomic(table, self.out / name)
            self._note_written(table)
        found, live_ms = 0, 0.0
        if self.live is not None:
            start = time.perf_counter()
            found = len(self.live(table, batch_id, name))
            live_ms = (time.perf_counter() - start) * 1000
        self.rows += n
        write_progress(self.run_dir, Progress(
            isolation=self.isolation, sink=self.mode, batch=batch_id,
            position=planned_end_offsets(self.checkpoint, batch_id),
            written=self.written, rows=self.rows, t=now_ms(),
        ))
        log.info("%s batch %d: %d rows; live checks %.0f ms, %d anomalies", self.isolation,
                 batch_id, n, live_ms, found)
        if self.hold_after_write_ms:
            # Fault-injection window (--hold-after-write-ms): the batch is written but
            # Spark has not yet committed it, so an observer kill now forces a replay.
            time.sleep(self.hold_after_write_ms / 1000)

    def _file_name(self, batch_id: int) -> str:
        if self.mode == "exactly-once":
            return f"batch-{batch_id:010d}.parquet"
        return f"batch-{batch_id:010d}-{uuid.uuid4().hex[:8]}.parquet"

    def _note_written(self, table: pa.Table) -> None:
        maxima = table.group_by(["topic", "partition"]).aggregate([("offset", "max")])
        for topic, partition, top in zip(maxima["topic"].to_pylist(),
                                         maxima["partition"].to_pylist(),
                                         maxima["offset_max"].to_pylist(), strict=True):
            key = (topic, int(partition))
            self.written[key] = max(self.written.get(key, -1), int(top))


def batch_files(run_dir: Path, isolation: str, batch_id: int) -> list[Path]:
    """The files the Spark sink wrote for one batch (two or more after a naive replay)."""
    return sorted(output_dir(run_dir, "spark", isolation).glob(f"batch-{batch_id:010d}*.parquet"))


def rows_in(files: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


__all__ = ["SINKS", "BatchSink", "batch_files", "rows_in"]
