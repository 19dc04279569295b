"""The generator clients: which program runs a logical producer, and at which version.

Every client writes the same history format and record values and follows the same
restart policy and transactional flow (docs/formats.md §2); each maps its own exceptions
to ok / fail / info in one table:

- ``kafka-python``: ``python -m producers`` (this package; table in
  :mod:`producers.outcomes`);
- ``java``: Kafka's own Java producer, a plain Java program in ``producers/java`` built at
  ``make setup`` against ``kafka-clients`` at ``KAFKA_CLIENTS_VERSION`` (default: the
  broker's version); table in ``producers/java/.../Outcomes.java`` and
  docs/java-generator.md;
- ``librdkafka``: confluent-kafka (its wheel bundles librdkafka), ``python -m
  producers.rdkafka``; table in :mod:`producers.rdkafka_outcomes`.

Both take ``--plan RUN/config.json --pid P`` and read the run from the plan.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from verifier.rundata import jvm
from verifier.rundata.errors import EnvironmentProblem, UsageError

CLIENTS = ("kafka-python", "java", "librdkafka")
DEFAULT_CLIENT = "kafka-python"

#: JVM flags of the Java generator: small heap, one GC thread, quick start (C1 only: the
#: generator is I/O-bound on a paced load)
JAVA_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-Dorg.slf4j.simpleLogger.showDateTime=true")
JAVA_MAIN = "verifier.generator.Main"


def check_client(client: str) -> str:
    """``client`` if known, else a :class:`UsageError` naming the known ones."""
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}; expected one of {', '.join(CLIENTS)}")
    return client


@lru_cache(maxsize=4)
def client_version(client: str) -> str:
    """The version of the client library a generator of ``client`` runs."""
    if check_client(client) == "java":
        return jvm.clients_version()
    if client == "librdkafka":
        try:
            import confluent_kafka
        except ImportError:
            return "unknown"
        return confluent_kafka.libversion()[0]
    try:
        return metadata.version("kafka-python")
    except metadata.PackageNotFoundError:
        return "unknown"


def require_built(client: str) -> None:
    """An :class:`EnvironmentProblem` when the client's generator cannot start here."""
    if check_client(client) == "librdkafka":
        try:
            import confluent_kafka  # noqa: F401
        except ImportError:
            raise EnvironmentProblem("confluent-kafka (librdkafka) is not installed: run "
                                     "`make setup`") from None
    if client == "java" and not jvm.java_generator_built():
        gen = jvm.java_generator_jars()
        raise EnvironmentProblem(
            f"the Java generator is not built for kafka-clients {gen.version} "
            f"({gen.folder}): run `make setup` (or `verifier setup`)")


def generator_argv(client: str, plan: Path, pid: str) -> list[str]:
    """The command line of one generator process reading the run from ``plan``."""
    if check_client(client) == "java":
        return [jvm.java_executable(), *JAVA_OPTS, "-cp",
                jvm.java_generator_jars().classpath(), JAVA_MAIN, "--plan", str(plan),
                "--pid", pid]
    module = "producers.rdkafka" if client == "librdkafka" else "producers"
    return [sys.executable, "-u", "-m", module, "--plan", str(plan), "--pid", pid]
