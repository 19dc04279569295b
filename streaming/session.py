"""A local (or remote) SparkSession that carries the Kafka connector.

The connector jars are resolved by Maven into ``.jars/spark-kafka-<pyspark version>/``
and handed to Spark with ``spark.jars``: no Ivy resolution at run time, so a session
starts the same way offline. ``spark.jars`` only takes effect when the session starts the
JVM, i.e. for the first session of a Python process.

The JVM's own output (its start-up lines: "Using Spark's default log4j profile", the
NativeCodeLoader WARN, "Setting default log level", and every later log4j line) goes to a
log file when ``log_file`` is given, never to the terminal of the tool: the JVM is
launched with its stdout and stderr on that file.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from verifier.rundata import jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Settings for a 2-core machine shared with three broker JVMs and the load generators.
LOCAL_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Bind to loopback: otherwise Spark may pick a non-loopback interface address.
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # No shuffles of any size in this project; 200 shuffle partitions would cost ~200 tasks.
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Streaming: keep a short history of checkpoint metadata; we never need old batches.
    "spark.sql.streaming.minBatchesToRetain": "20",
    "spark.sql.adaptive.enabled": "false",
}


#: What ``verifier chaos`` gives every Spark application it starts (the observers, its own
#: verification) unless its ``--spark-conf`` says otherwise: the JVM's C1 compiler only.
#: On 2 cores C2's compiler threads compete with the work of a short-lived driver; side by
#: side on this machine (2026-11-24) a session started in ~7 s instead of ~12 s, its first
#: job ran in ~3 s instead of ~6 s, and the verification of each quick-profile run took
#: ~9 s instead of ~14 s (the first, cold, 20 s instead of 30 s).
#: C1 alone reserves a 48 MB code cache (the tiered default is 240 MB): a long-lived driver
#: filled it ("CodeCache is full. Compiler has been disabled") and then died of a
#: VirtualMachineError in the middle of a job (the test suite's shared session, a fresh
#: clone's make test, 2026-11-24), so the cache is set back to the tiered size.
CHAOS_CONF: dict[str, str] = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"}

#: the user's Spark settings (``verifier chaos --spark-conf``) as a JSON object: every
#: Spark application the tool starts (its own, the observer's) applies them last
SPARK_CONF_ENV = "VERIFIER_SPARK_CONF"


def user_conf() -> dict[str, str]:
    try:
        conf = json.loads(os.environ.get(SPARK_CONF_ENV) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in conf.items()} if isinstance(conf, dict) else {}


def application_conf(master: str, conf: dict[str, str] | None = None) -> dict[str, str]:
    """The settings of one Spark application: ours, the caller's, the user's; on a
    standalone master an application takes every free core unless told otherwise, so the
    tool's applications (the observer, the verification) each take one core unless the
    user set ``spark.cores.max``. The driver maps the class archive of
    :mod:`streaming.class_share` when there is one and no option chose otherwise."""
    from streaming.class_share import driver_options

    settings = dict(LOCAL_CONF)
    settings.update(conf or {})
    settings.update(user_conf())
    if master.startswith("spark://"):
        settings.setdefault("spark.cores.max", "1")
    options = driver_options(settings.get("spark.driver.extraJavaOptions", ""))
    if options:
        settings["spark.driver.extraJavaOptions"] = options
    return settings


def connector_jars() -> list[str]:
    """Absolute paths of the Spark Kafka connector jars, resolving them if needed."""
    jarset = jvm.spark_kafka_jars()
    jvm.resolve(jarset)
    return [str(p) for p in jarset.jars()]


def session_running() -> bool:
    """Whether this process already has a SparkContext (a test's shared session): a
    command that finds one uses it and leaves it running. Asked of the context, not of
    ``SparkSession.getActiveSession()``: that is per thread of the JVM, and py4j may answer
    from another thread, where it says none, and the command then stopped the test's."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def spark_session(
    app_name: str = "delivery-verifier",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    log_file: Path | None = None,
) -> SparkSession:
    """Build (or return the running) SparkSession with the Kafka connector loaded.

    ``master`` defaults to ``$SPARK_MASTER`` or ``local[2]``. For a remote master the same
    jars are shipped with ``spark.jars``. ``log_file``: where the JVM's output goes (appended)
    if this call starts the JVM; otherwise it inherits this process's stdout and stderr.
    """
    jvm.require_java()
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", _python()))
    master = master or os.environ.get("SPARK_MASTER") or "local[2]"
    builder = SparkSession.builder.appName(app_name).master(master)
    settings = application_conf(master, {"spark.jars": ",".join(connector_jars()),
                                         **(conf or {})})
    for key, value in settings.items():
        builder = builder.config(key, value)
    if log_file is not None:
        _start_logged(Path(log_file), {"spark.master": master, "spark.app.name": app_name,
                                       **settings})
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _start_logged(log_file: Path, settings: dict[str, str]) -> None:
    """Start the JVM and its SparkContext with the JVM's stdout and stderr on ``log_file``
    (the session built next adopts the context). A JVM already running (an earlier
    session of this process) keeps its output where it was."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._active_spark_context is not None or SparkContext._gateway is not None:
        return
    conf = SparkConf()
    for key, value in settings.items():
        conf.set(key, value)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as out:  # the JVM holds its own copy of the descriptor
        gateway = launch_gateway(conf, popen_kwargs={"stdout": out,
                                                     "stderr": subprocess.STDOUT})
    SparkContext(conf=conf, gateway=gateway)


def _python() -> str:
    import sys

    return sys.executable


def driver_process() -> threading.Event:
    """Set up a Spark driver process of the tool (the observer, a pipeline's driver):
    INFO logging to stderr, and SIGTERM / SIGINT setting the returned event, on which the
    process stops its queries cleanly and exits 0."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stop.set())
    # SIGUSR1: every thread's stack to the log, from C, so even with the main thread stuck
    # in a JVM call (the tool sends it to a driver that ignored its SIGTERM, before SIGKILL)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    return stop

