"""The Structured Streaming observer: every run topic at both isolation levels.

Run as its own OS process (the nemesis SIGKILLs and restarts it)::

    python -m streaming.observer --run-dir RUN --bootstrap-servers BS --topics a,b \\
        --run-id ID [--sink exactly-once|at-least-once] [--spark-master M] [--trigger-ms 500]
    python -m streaming.observer --plan RUN/config.json [--trigger-ms 500]

With ``--plan`` (what the orchestrator uses) the run folder, run id, topics, cluster,
sink, Spark master and the clients' security settings come from the run's plan; the
secrets from ``$VERIFIER_CLIENT_SECRETS`` (verifier.rundata.plan), handed to the Kafka
source as ``kafka.*`` options (streaming.security).

Two queries, one per isolation level, each with its own checkpoint
(``RUN/checkpoints/<isolation>``: a checkpoint written under one level fails under the
other, notes/spark-kafka.md §4.5) and its own output. The query only projects the Kafka
rows; its ``foreachBatch`` sink (streaming.sinks) collects them, decodes them on the
driver (streaming.decode), writes them and publishes progress (streaming.progress).
SIGTERM or SIGINT stops both queries and exits 0; after a SIGKILL, the same command line
continues from the checkpoints.

The observer records every row it received (no dedup, no filter); beside the recording,
the live checks (streaming.live, ``--live-checks``) apply the anomaly definitions to each
batch and write what they find to ``RUN/anomalies/``. Verdicts are made elsewhere.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from streaming.decode import raw_rows
from streaming.live import LiveSink
from streaming.observations import ISOLATION_LEVELS, write_format_file
from streaming.progress import checkpoint_dir, read_progress
from streaming.security import spark_kafka_options
from streaming.session import driver_process
from streaming.sinks import SINKS, BatchSink
from verifier.rundata.errors import UsageError, VerifierError
from verifier.rundata.naming import spark_source_options
from verifier.rundata.plan import read_plan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("streaming.observer")

#: local[2,4]: two cores, and up to 4 attempts per task. Local mode does not retry a
#: failed task otherwise, and with a short poll timeout a slow broker (a fault in
#: progress) can fail one fetch; a retry re-reads the same range, the sink still runs once.
DEFAULT_MASTER = "local[2,4]"

#: kafkaConsumer.pollTimeoutMs. The default (spark.network.timeout, 120 s) is what a task
#: waits when its range ends in offsets it cannot see (transaction markers, aborted
#: records under read_committed): at a run's end that is nearly every partition. A
#: too-small value fails fetches from a busy broker (hence the task retries above).
DEFAULT_POLL_TIMEOUT_MS = 2000

#: The observer's driver heap. With 1 GB its catch-up after a restart (two levels'
#: 200k-offset batches collected on the driver) kept the heap ~60% full and G1 in
#: concurrent cycles for most of the time: side by side on a 2M-record backlog
#: (2026-11-24, five pairs, benchmarks/observer_bench.py's setting) 2 GB read 81-83k
#: rows/s per level against 72-75k (medians), less JVM CPU per row (6.0 vs 6.5 us).
#: The user's --spark-conf still decides (streaming.session.user_conf).
OBSERVER_CONF = {"spark.driver.memory": "2g"}

EXIT_OK = 0
EXIT_QUERY_FAILED = 2


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m streaming.observer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", type=Path, default=None, metavar="RUN/config.json",
                   help="the run's plan; then leave out the flags marked *")
    p.add_argument("--run-dir", type=Path, help="*")
    p.add_argument("--bootstrap-servers", help="*")
    p.add_argument("--topics", help="* comma-separated run topics")
    p.add_argument("--run-id", help="* records of other runs are foreign")
    p.add_argument("--sink", choices=SINKS, default=None, help="* default exactly-once")
    p.add_argument("--spark-master", default=None,
                   help=f"* default: $SPARK_MASTER or {DEFAULT_MASTER}")
    p.add_argument("--trigger-ms", type=int, default=500, help="micro-batch interval")
    p.add_argument("--poll-timeout-ms", type=int, default=DEFAULT_POLL_TIMEOUT_MS)
    p.add_argument("--max-offsets-per-trigger", type=int, default=200_000,
                   help="bounds a batch (and the driver's memory) after a restart with a "
                        "backlog; counts offsets, markers included")
    p.add_argument("--isolation-levels", default=",".join(ISOLATION_LEVELS),
                   help="comma-separated subset of read_committed,read_uncommitted")
    p.add_argument("--live-checks", choices=("on", "off"), default="on",
                   help="run the anomaly checks on each batch as it is written (needs "
                        "the run's producers: --plan or --live-producers; streaming.live)")
    p.add_argument("--live-producers", default=None, metavar="PID=TOPIC,...",
                   help="* the run's producers and their topics, for the live checks")
    p.add_argument("--hold-after-write-ms", type=int, default=0,
                   help="fault injection: pause after each batch is written, before "
                        "Spark commits it, so a kill there forces a replay")
    args = p.parse_args(argv)
    try:
        args.security = _apply_plan(args)
    except VerifierError as exc:  # a usage error, or a plan that cannot be read
        p.error(str(exc))
    if args.live_producers and args.plan is None:
        pairs = [x.split("=", 1) for x in args.live_producers.split(",") if x]
        if any(len(x) != 2 for x in pairs):
            p.error("--live-producers: expected PID=TOPIC,...")
        args.producer_topics = dict(pairs)
    if isinstance(args.topics, str):
        args.topics = [t for t in args.topics.split(",") if t]
    args.isolation_levels = [i for i in args.isolation_levels.split(",") if i]
    bad = set(args.isolation_levels) - set(ISOLATION_LEVELS)
    if bad or not args.topics:
        p.error(f"unknown isolation levels {sorted(bad)}" if bad else "no topics")
    return args


PLANNED = ("run_dir", "bootstrap_servers", "topics", "run_id", "sink", "spark_master")


def _apply_plan(args: argparse.Namespace) -> dict[str, str]:
    """Fill the planned flags from ``--plan``; return the Kafka source's security options."""
    flags = [f"--{k.replace('_', '-')}" for k in PLANNED if getattr(args, k) is not None]
    if args.plan is None:
        missing = [f"--{k.replace('_', '-')}" for k in PLANNED[:4] if getattr(args, k) is None]
        if missing:
            raise UsageError(f"{', '.join(missing)} required (or --plan RUN/config.json)")
        args.sink = args.sink or "exactly-once"
        return {}
    if flags:
        raise UsageError(f"{', '.join(flags)}: given by the plan, leave out with --plan")
    plan = read_plan(args.plan)
    args.run_dir, args.run_id = args.plan.parent, plan.run
    args.bootstrap_servers, args.topics = plan.bootstrap_servers, plan.topics
    args.sink, args.spark_master = plan.sink, plan.spark_master
    args.producer_topics = {pid: p.topic for pid, p in plan.producers.items()}
    args.user_input = bool(plan.user_input)
    return {**spark_kafka_options(plan.client_security()), **spark_source_options(plan.run)}


def start_query(spark: SparkSession, args: argparse.Namespace, isolation: str) -> StreamingQuery:
    """One query: the run's topics at ``isolation`` into its own sink and checkpoint."""
    checkpoint = checkpoint_dir(args.run_dir, isolation)
    previous = read_progress(args.run_dir, isolation)
    topics = getattr(args, "producer_topics", None)
    live = (LiveSink(args.run_dir, isolation, args.sink, args.run_id, topics)
            if args.live_checks == "on" and topics else None)
    sink = BatchSink(args.run_dir, isolation, checkpoint, args.sink, args.run_id,
                     written=previous.written if previous else None,
                     rows=previous.rows if previous else 0,
                     hold_after_write_ms=args.hold_after_write_ms, live=live)
    source = (
        spark.readStream.format("kafka")
        .options(**getattr(args, "security", {}))
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", ",".join(args.topics))
        # Reaches the driver's offset listing too: under read_committed "latest" is the
        # LSO, so no batch is planned past an open transaction.
        .option("kafka.isolation.level", isolation)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
        .option("kafkaConsumer.pollTimeoutMs", str(args.poll_timeout_ms))
        .option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
        # a pipeline file's records carry their identity in a header (issue 46)
        .option("includeHeaders", "true" if getattr(args, "user_input", False) else "false")
        .load()
    )
    return (
        raw_rows(source)
        .writeStream.queryName(f"observer-{isolation}")
        .option("checkpointLocation", str(checkpoint))
        .foreachBatch(sink)
        .trigger(processingTime=f"{args.trigger_ms} milliseconds")
        .start()
    )


def supervise(queries: list[StreamingQuery], stop: threading.Event) -> int:
    """Wait until a stop signal (exit 0) or a failed query (exit 2); stop every query."""
    code = EXIT_OK
    while not stop.wait(0.5):
        failed = [q for q in queries if not q.isActive]
        if failed:
            for q in failed:
                log.error("query %s stopped: %s", q.name, q.exception())
            code = EXIT_QUERY_FAILED
            break
    for q in queries:
        # Stop queries before anything else goes away (notes §4.6).
        _quietly(q.stop, f"stopping {q.name}")
    return code


def _quietly(action, what: str) -> None:
    """Run a shutdown step; a JVM that is already gone is not an error at this point.

    A signal sent to the whole process group (Ctrl-C, ``timeout``) also reaches Spark's
    JVM, which may then shut down under us.
    """
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - py4j raises several unrelated types here
        log.warning("%s: %s: %s", what, type(exc).__name__, str(exc)[:200])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = driver_process()
    write_format_file(args.run_dir)
    from streaming.session import spark_session

    master = args.spark_master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER
    spark = spark_session(app_name=f"observer-{args.run_id}", master=master,
                          conf=OBSERVER_CONF)
    log.info("observer %s: topics %s, sink %s, master %s, pid %d", args.run_id, args.topics,
             args.sink, master, os.getpid())
    try:
        queries = [start_query(spark, args, iso) for iso in args.isolation_levels]
        code = supervise(queries, stop)
    finally:
        _quietly(spark.stop, "stopping Spark")
    log.info("observer %s exits %d", args.run_id, code)
    return code


if __name__ == "__main__":
    sys.exit(main())
