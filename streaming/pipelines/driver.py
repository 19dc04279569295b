"""The driver of one pipeline under test: its own process, Spark session and checkpoint.

    python -m streaming.pipelines.driver --plan RUN/config.json --pipeline NAME

Reads the run's topics with Spark's Kafka source at the pipeline's isolation level (from
the earliest offsets), hands the frame to the pipeline's ``build(spark, source)``, checks
the writer it returns (the value must reach the output: a writer that drops it is refused
before its query starts, exit 64), adds the checkpoint location
(``RUN/pipelines/NAME/checkpoint``) and starts the query. The nemesis SIGKILLs it and
starts the same command again: the query continues from its checkpoint.

On SIGTERM (the end of the run) it stops the query, reads the output back
(streaming.pipelines.readback) into ``RUN/pipelines/NAME/output.parquet`` and exits 0;
``--readback-only`` does only that.

    python -m streaming.pipelines.driver --check SPEC [--pipeline-guarantee G]

checks a pipeline before any run exists (``verifier chaos`` does it first for a user's
pipeline, before the cluster starts): the same ``build(spark, source)`` and the same
writer check on a Kafka source frame that names no reachable broker (the frame is lazy:
its columns are the source's, nothing connects), in a one-core session; exit 0, or 64
with the refusal on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path

from streaming.pipelines import readback as R
from streaming.pipelines.contract import (
    CONF_BOOTSTRAP,
    CONF_HOLD_MARKER,
    CONF_HOLD_MS,
    CONF_HOLD_WHERE,
    CONF_PATH,
    CONF_TOPIC,
    PipelineError,
    check_writer,
)
from streaming.pipelines.hold import build_with_hold, watch_source_hold
from streaming.pipelines.jdbc import CONF_JDBC_TABLE, CONF_JDBC_URL
from streaming.pipelines.loader import load_pipeline
from streaming.pipelines.reference import pipeline_source, read_back_and_compare_runs
from streaming.pipelines.triggers import real_time_marker, recording_trigger
from streaming.security import spark_kafka_options
from streaming.session import driver_process
from verifier.rundata.errors import VerifierError
from verifier.rundata.formats import write_json_atomic
from verifier.rundata.naming import spark_source_options
from verifier.rundata.pipelines import PipelineLayout, write_readback
from verifier.rundata.plan import read_plan

log = logging.getLogger("streaming.pipelines.driver")

EXIT_OK, EXIT_QUERY_FAILED, EXIT_USAGE = 0, 2, 64
DEFAULT_MASTER = "local[2,4]"  # as the observer's: two cores, task retries
POLL_TIMEOUT_MS = 2000  # as the observer's (streaming.observer.DEFAULT_POLL_TIMEOUT_MS)

#: Delta Lake in the pipeline's session (its jars: .jars/delta-<version>). A snapshot of
#: the table's log is built in 2 partitions, not Delta's 50: a run's tables are small, and
#: on a loaded 2-core machine (CI, 2026-11-30) the 50 tasks of one snapshot took 2 min on a
#: standalone cluster's executors, so the delta pipeline's first batch with data started
#: 5 min into the run and its executor-kill trigger (240 s) never came
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.snapshotPartitions": "2",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m streaming.pipelines.driver",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", type=Path, metavar="RUN/config.json")
    p.add_argument("--pipeline", help="its name in the plan's pipelines")
    p.add_argument("--check", metavar="SPEC",
                   help="check the pipeline SPEC names (no run, no cluster) and exit")
    p.add_argument("--pipeline-guarantee", help="with --check: the guarantee it claims")
    p.add_argument("--readback-only", action="store_true",
                   help="read the output back and exit (no query)")
    args = p.parse_args(argv)
    if args.check is None and (args.plan is None or args.pipeline is None):
        p.error("--plan and --pipeline are required (or --check SPEC)")
    return args


def session(app: str, master: str, where: PipelineLayout, entry: dict,
            bootstrap_servers: str):
    """The pipeline's SparkSession: Kafka connector and Delta jars, the tool's settings."""
    from streaming.session import spark_session
    from verifier.rundata import jvm

    delta = jvm.delta_jars()
    jvm.resolve(delta)
    # a database sink (issue 46): the PostgreSQL JDBC driver, and where to write
    jdbc = [str(p) for p in jvm.postgres_jdbc_jars().jars()] if entry.get("jdbc_url") else []
    conf = {**DELTA_CONF, "spark.jars": ",".join(
        [*(str(p) for p in jvm.spark_kafka_jars().jars()), *(str(p) for p in delta.jars()),
         *jdbc]),
        # on the driver's own classpath too: the presets' SQL runs there through py4j
        **({CONF_JDBC_URL: entry["jdbc_url"], CONF_JDBC_TABLE: entry["jdbc_table"],
            "spark.driver.extraClassPath": ":".join(jdbc)} if jdbc else {}),
        CONF_PATH: str(where.output), CONF_TOPIC: str(entry.get("output_topic") or ""),
        CONF_BOOTSTRAP: bootstrap_servers, CONF_HOLD_MS: str(entry.get("hold_ms") or 0),
        CONF_HOLD_MARKER: str(where.holding),
        # a run that kills executors holds partway through a task (streaming.pipelines.hold)
        CONF_HOLD_WHERE: str(entry.get("hold_where") or "source"),
        # on the standalone cluster the run started: one executor per worker
        # (verifier.harness.spark_standalone.pipeline_conf)
        **(entry.get("spark_conf") or {})}
    return spark_session(app_name=app, master=master, conf=conf)


def kafka_source(spark, bootstrap_servers: str, topics, isolation: str, security: dict,
                 fail_on_data_loss: bool = True, options: dict | None = None):
    """The frame a pipeline's ``build`` receives: Spark's Kafka source on the run's topics
    (lazy: nothing connects before a query starts). ``fail_on_data_loss``: the source's
    failOnDataLoss (a scenario's ``[pipelines]`` table may run it false too); ``options``:
    more (a declared input's headers, a reference run's batch size)."""
    return (
        spark.readStream.format("kafka").options(**security).options(**(options or {}))
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", ",".join(topics))
        .option("kafka.isolation.level", isolation)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true" if fail_on_data_loss else "false")
        .option("kafkaConsumer.pollTimeoutMs", str(POLL_TIMEOUT_MS))
        .load()
    )


def built_writer(spark, pipeline, source):
    """``build(spark, source)``, its writer checked: a dropped value is refused before
    anything runs (PipelineError). When the run kills pipelines (``hold_ms``), with the
    batch hold in place (streaming.pipelines.hold): a preset or a user's query alike; a
    real-time trigger gets none (streaming.pipelines.triggers). Returns the writer and
    its trigger (triggers.describe); a real-time trigger on a PySpark before 4.1 is
    refused (PipelineError)."""
    with recording_trigger(pipeline.spec) as seen:
        writer = build_with_hold(spark, pipeline.build, source)
    if seen.real_time and writer is not None and spark.conf.get(CONF_HOLD_MS, "0") != "0":
        # Spark's real-time allowlist has no Python operator: built again without the
        # hold (the writer with it is dropped unstarted); the driver marks the batch
        writer = pipeline.build(spark, source)
    check_writer(pipeline, writer)
    return writer, seen.trigger


def start_query(spark, pipeline, plan, entry: dict, where: PipelineLayout, security: dict):
    """(the started query, its trigger)."""
    source = pipeline_source(spark, plan, entry, security, kafka_source)
    writer, trigger = built_writer(spark, pipeline, source)
    return (writer.queryName(f"pipeline-{pipeline.name}")
            .option("checkpointLocation", str(where.checkpoint)).start()), trigger


#: what the check's source names: a port nothing listens on, never contacted
CHECK_BOOTSTRAP = "127.0.0.1:9"


def check_only(spec: str, guarantee: str | None) -> int:
    """``--check``: build the pipeline on a source frame and check its writer, no run."""
    import tempfile

    try:
        pipeline = load_pipeline(spec, guarantee)
    except VerifierError as exc:
        print(f"refused: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="verifier-pipeline-check-") as tmp:
        where = PipelineLayout(Path(tmp), pipeline.name)
        spark = session(f"pipeline-check-{pipeline.name}", "local[1]", where,
                        {"output_topic": "verifier.check.out"}, CHECK_BOOTSTRAP)
        try:
            _, trigger = built_writer(spark, pipeline, kafka_source(
                spark, CHECK_BOOTSTRAP, ["verifier.check"], "read_committed", {},
                options={"includeHeaders": "true"} if pipeline.file.inputs else None))
        except PipelineError as exc:
            print(f"refused: {exc}", file=sys.stderr, flush=True)
            return EXIT_USAGE
        except Exception as exc:  # noqa: BLE001 - the user's build(): say what broke
            print(f"refused: pipeline {spec}: build(spark, source) failed: "
                  f"{type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr, flush=True)
            return EXIT_USAGE
        finally:
            try:
                spark.stop()
            except Exception:  # noqa: BLE001, S110 - exiting anyway
                pass
    print(f"pipeline {spec}: " + ("judged against its fault-free run"
                                  if pipeline.file.oracle == "reference" else
                                  f"its output keeps {pipeline.value_column!r}")
          + ("; real-time trigger " + trigger.get("text", "")
             if trigger["kind"] == "real-time" else ""), flush=True)
    return EXIT_OK


def read_back(spark, pipeline, plan, entry: dict, where: PipelineLayout,
              security: dict, query_error: str | None = None) -> None:
    """The output as identity rows, and the checkpoints' batches, into the run folder;
    ``query_error``: Spark's message when the query stopped with an error."""
    started = time.monotonic()
    source = R.source_of(where, pipeline.read_output is not None)
    info = {"pipeline": pipeline.name, "source": source,
            "batches": R.checkpoint_batches(where),
            **({"query_error": query_error} if query_error else {})}
    try:
        tasks = None  # a Kafka sink's task attempts, from its records' headers
        if source == "topic":
            values, batches, tasks = R.read_topic_records(
                plan.bootstrap_servers, entry["output_topic"], **plan.client_security())
        else:
            frame = R.read_frame(spark, where, source, pipeline.read_output)
            values, batches = R.frame_values(frame, pipeline.value_column)
        rows = R.decode_values(plan.run, values, batches, tasks,
                               pipeline.file.id_field)
    except Exception as exc:  # noqa: BLE001 - recorded: the judge says UNKNOWN with it
        log.error("read-back of %s failed: %s", pipeline.name, exc)
        write_readback(where, R.decode_values(plan.run, []),
                       {**info, "error": f"{type(exc).__name__}: {str(exc)[:500]}"})
        return
    info["seconds"] = round(time.monotonic() - started, 3)
    write_readback(where, rows, info)
    log.info("read back %d rows of %s from %s", rows.num_rows, pipeline.name, source)


def supervise(query, stop: threading.Event, tick=None) -> int:
    """Until ``stop`` (SIGTERM) or the query ends; ``tick()`` every half second (the
    source hold's watch: streaming.pipelines.hold.watch_source_hold)."""
    while not stop.wait(0.5):
        if not query.isActive:
            log.error("query %s stopped: %s", query.name, query.exception())
            return EXIT_QUERY_FAILED
        if tick is not None:
            tick()
    return EXIT_OK


def _tick(spark, where: PipelineLayout, entry: dict, trigger: dict, started: float):
    """What the driver looks at every half second: the source hold's stage, or, for a
    real-time query under a kill scenario, how far its batch has run (the marker a
    ``mid-batch`` kill waits for: streaming.pipelines.triggers)."""
    if trigger["kind"] == "real-time" and (entry.get("hold_ms") or 0) > 0 and trigger["ms"]:
        return lambda: real_time_marker(where.holding, where.checkpoint, started,
                                        trigger["ms"])
    return lambda: watch_source_hold(spark, where.holding)


def stop_message(query) -> str:
    """Spark's message of a query that stopped with an error, with the messages of its
    causes: a StreamingQueryException's own text may only say that a task failed
    ("[TASK_WRITE_FAILED] Task failed while writing rows to ...") while the cause is the
    Kafka source's "Some data may have been lost ...". Without the JVM stack, at most
    2000 characters."""
    try:
        exc = query.exception()
    except Exception as err:  # noqa: BLE001 - the JVM going away: say that much
        return f"the query stopped; its exception could not be read: {err}"
    if exc is None:
        return "the query stopped without an exception"
    text = str(getattr(exc, "desc", None) or exc).split("\n=== Streaming Query ===")[0]
    parts = [" ".join(text.split())[:PART_CHARS]]  # a message may carry a whole stack
    for cause in _cause_messages(exc):
        flat = " ".join(cause.split())[:PART_CHARS]
        if flat and not any(flat in p for p in parts):
            parts.append(flat)
    return "; caused by: ".join(parts)[:2000]


#: each message of a stopped query's chain at most this long: the root cause (the Kafka
#: source's data loss) must not be cut off by a long outer message
PART_CHARS = 600


def _cause_messages(exc, most: int = 8) -> list[str]:
    """The messages of a PySpark exception's causes, outermost first. PySpark converts a
    Java exception's cause chain into its own (``_cause``, each with its ``_desc``: the
    Java ``toString``, class and message); where one still holds its Java exception
    (``_origin``), the rest of the chain is read from the JVM."""
    out: list[str] = []
    cause = getattr(exc, "_cause", None)
    while cause is not None and len(out) < most:
        origin = getattr(cause, "_origin", None)
        if origin is not None:
            return out + _java_causes(origin, most - len(out))
        out.append(str(getattr(cause, "_desc", None) or cause))
        cause = getattr(cause, "_cause", None)
    return out


def _java_causes(origin, most: int = 8) -> list[str]:
    """The messages of a Java exception and its causes (py4j), outermost first."""
    out: list[str] = []
    for _ in range(most):
        if origin is None:
            break
        try:
            message, origin = origin.toString(), origin.getCause()
        except Exception:  # noqa: BLE001 - a JVM going away: what was read so far
            break
        if message:
            out.append(str(message))
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.check is not None:
        return check_only(args.check, args.pipeline_guarantee)
    stop = driver_process()
    try:
        plan = read_plan(args.plan)
        entry = dict(plan.pipelines[args.pipeline])
        pipeline = load_pipeline(entry["spec"], entry.get("guarantee"))
        security = plan.client_security()
    except (KeyError, VerifierError) as exc:
        print(f"pipeline {args.pipeline}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # absolute: executors of a cluster run in folders of their own (the output, the hold's
    # marker, the checkpoint's state are paths they write to)
    where = PipelineLayout(args.plan.parent.absolute(), args.pipeline)
    where.root.mkdir(parents=True, exist_ok=True)
    # a hold's marker left by a killed predecessor: no batch of this process holds yet
    where.holding.unlink(missing_ok=True)
    master = (entry.get("spark_master") or plan.spark_master or os.environ.get("SPARK_MASTER")
              or DEFAULT_MASTER)
    spark = session(f"pipeline-{args.pipeline}-{plan.run}", master, where, entry,
                    plan.bootstrap_servers)
    code, query_error = EXIT_OK, None
    try:
        if not args.readback_only:
            try:
                query, trigger = start_query(spark, pipeline, plan, entry, where,
                                             {**spark_kafka_options(security),
                                              **spark_source_options(plan.run)})
            except PipelineError as exc:
                print(f"refused: {exc}", file=sys.stderr, flush=True)
                write_json_atomic(where.root / "refused.json", {"error": str(exc)})
                return EXIT_USAGE
            # the application id: an executor kill finds the application's executors by it
            started = time.time()
            write_json_atomic(where.ready, {"pid": os.getpid(), "t": started,
                                            "app": spark.sparkContext.applicationId,
                                            "trigger": trigger,
                                            "spark_version": spark.version})
            log.info("pipeline %s (%s) started on PySpark %s: pid %d, trigger %s",
                     pipeline.name, pipeline.spec, spark.version, os.getpid(), trigger)
            code = supervise(query, stop, _tick(spark, where, entry, trigger, started))
            if code == EXIT_QUERY_FAILED:
                query_error = stop_message(query)
            try:
                query.stop()  # before the read-back, and before the brokers go (notes §4.6)
            except Exception as exc:  # noqa: BLE001 - a JVM already going away
                log.warning("stopping the query: %s", exc)
        if pipeline.file.oracle == "reference":  # its rows, then its fault-free runs
            read_back_and_compare_runs(spark, pipeline, plan, entry, where,
                                       spark_kafka_options(security), kafka_source,
                                       query_error)
        else:
            read_back(spark, pipeline, plan, entry, where, security, query_error)
    finally:
        try:
            spark.stop()
        except Exception:  # noqa: BLE001, S110 - exiting anyway
            pass
    return code


if __name__ == "__main__":
    sys.exit(main())
