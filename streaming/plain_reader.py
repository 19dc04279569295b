"""The plain reader: kafka-python reads every run topic once per isolation level.

After a run (and its drain), it reads each partition from the beginning up to the end
offset at that isolation level (the LSO under read_committed, the high watermark under
read_uncommitted) and writes rows of the observation schema (``reader = "plain"``,
``batch = -1``) to ``RUN/observations/plain/<isolation>/``. Comparing them with the Spark
observer's rows tells "never in the log" from "in the log but not delivered by Spark".

A partition is done when the consumer's *position* reaches the end offset, not when the
last record arrives: transaction markers and aborted records take offsets that are never
returned, so the last visible record may sit well below the end.

    python -m streaming.plain_reader --run-dir RUN --bootstrap-servers BS --topics a,b --run-id ID
    python -m streaming.plain_reader --plan RUN/config.json     (security settings included)
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import pyarrow as pa
from kafka import KafkaConsumer, TopicPartition

from streaming.observations import (
    ISOLATION_LEVELS,
    SCHEMA,
    decode_row,
    output_dir,
    write_format_file,
    write_table_atomic,
)
from streaming.progress import now_ms
from verifier.rundata.errors import VerifierError
from verifier.rundata.pipeline_file import ID_HEADER
from verifier.rundata.plan import read_plan
from verifier.rundata.waiting import wait_until

log = logging.getLogger(__name__)

#: rows per Parquet file: bounds the reader's memory on long runs
CHUNK_ROWS = 200_000


def read_isolation(bootstrap_servers: str, topics: list[str], run_id: str, isolation: str,
                   run_dir: Path, timeout: float = 300, **client_config) -> int:
    """Read ``topics`` at ``isolation`` up to their current end offsets; return rows written."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, isolation_level=isolation,
                             enable_auto_commit=False, group_id=None,
                             max_poll_records=5000,
                             **{"client_id": f"verifier.reader.{isolation}", **client_config})
    out = output_dir(run_dir, "plain", isolation)
    for old in out.glob("part-*.parquet"):  # a rerun replaces the previous read
        old.unlink()
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        writer = _ChunkWriter(out)
        pending = {tp for tp in tps if consumer.position(tp) < ends[tp]}
        consumer.pause(*(set(tps) - pending))

        def probe() -> tuple[bool, dict]:
            for tp, messages in consumer.poll(timeout_ms=500).items():
                seen = now_ms()
                writer.add(_row(run_id, isolation, m, seen) for m in messages
                           if m.offset < ends[tp])
            for tp in list(pending):
                if consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
                    consumer.pause(tp)  # records past the snapshot end are not ours
            behind = {f"{tp.topic}-{tp.partition}": f"{consumer.position(tp)}/{ends[tp]}"
                      for tp in pending}
            return not pending, behind

        wait_until(probe, timeout=timeout, interval=0.001, max_interval=0.001,
                   what=f"the plain reader to reach the {isolation} end offsets",
                   expected="position == end offset for every partition",
                   describe=lambda b: f"position/end still behind: {b}")
        return writer.close()
    finally:
        consumer.close()


def _row(run_id: str, isolation: str, message, seen: int) -> dict:
    return {"reader": "plain", "isolation": isolation, "topic": message.topic,
            "partition": message.partition, "offset": message.offset,
            **decode_row(run_id, identity_of(message)), "ts_broker": message.timestamp,
            "batch": -1, "observed_at": seen}


def identity_of(message) -> bytes | None:
    """What names a record: its value, or a user's record's ``verifier.id`` header (issue
    46: the value is the user's own)."""
    for key, value in message.headers or ():
        if key == ID_HEADER:
            return value
    return message.value


class _ChunkWriter:
    """Buffers rows and writes them as ``part-<n>.parquet`` files of CHUNK_ROWS rows."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.rows: list[dict] = []
        self.parts = 0
        self.total = 0

    def add(self, rows) -> None:
        self.rows.extend(rows)
        if len(self.rows) >= CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        table = pa.Table.from_pylist(self.rows, schema=SCHEMA)
        write_table_atomic(table, self.out / f"part-{self.parts:05d}.parquet")
        self.parts += 1
        self.total += len(self.rows)
        self.rows = []

    def close(self) -> int:
        if self.rows or not self.parts:  # always one file, even empty: "read, saw nothing"
            self._flush()
        return self.total


def read_all(bootstrap_servers: str, topics: list[str], run_id: str, run_dir: Path,
             timeout: float = 300, **client_config) -> dict[str, int]:
    """Both isolation levels; ``{isolation: rows}``."""
    write_format_file(run_dir)
    return {iso: read_isolation(bootstrap_servers, topics, run_id, iso, run_dir, timeout,
                                **client_config)
            for iso in ISOLATION_LEVELS}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m streaming.plain_reader", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", type=Path, default=None, metavar="RUN/config.json",
                   help="the run's plan (instead of the four flags below); its security "
                        "settings, secrets from $VERIFIER_CLIENT_SECRETS")
    p.add_argument("--run-dir", type=Path)
    p.add_argument("--bootstrap-servers")
    p.add_argument("--topics", help="comma-separated run topics")
    p.add_argument("--run-id")
    p.add_argument("--timeout", type=float, default=300, help="deadline per isolation level")
    args = p.parse_args(argv)
    given = [v is not None for v in (args.run_dir, args.bootstrap_servers, args.topics,
                                      args.run_id)]
    if any(given) if args.plan is not None else not all(given):
        p.error("give --plan, or all of --run-dir --bootstrap-servers --topics --run-id")
    security: dict = {}
    if args.plan is not None:
        try:
            plan = read_plan(args.plan)
            security = plan.client_security()
        except VerifierError as exc:
            p.error(str(exc))
        args.run_dir, args.bootstrap_servers = args.plan.parent, plan.bootstrap_servers
        args.topics, args.run_id = ",".join(plan.topics), plan.run
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    counts = read_all(args.bootstrap_servers, [t for t in args.topics.split(",") if t],
                      args.run_id, args.run_dir, args.timeout, **security)
    for iso, n in counts.items():
        print(f"{iso}: {n} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
