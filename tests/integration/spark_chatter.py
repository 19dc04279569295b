"""Spark's start-up lines stay in the run's log files, off the terminal (issue 17): what
they look like. `verifier analyze` is held to it in
tests/integration/orchestration/test_generator_start_failure.py (its offline analysis, its
own process and JVM), `verifier chaos` in test_external_spark.py and
test_external_cluster.py."""

from __future__ import annotations

#: what Spark's JVM prints while it starts (log4j's defaults, Hadoop, the JDK)
SPARK_CHATTER = ("NativeCodeLoader", "Using Spark's default log4j profile",
                 "Setting default log level", "To adjust logging level",
                 "WARNING: Using incubator modules")


def chatter(text: str) -> list[str]:
    """The lines of ``text`` that are Spark's start-up chatter (or any log4j WARN)."""
    return [line for line in text.splitlines()
            if any(c in line for c in SPARK_CHATTER) or " WARN " in line]
