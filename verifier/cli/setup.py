"""`verifier setup`: resolve the JVM artifacts (idempotent)."""

from __future__ import annotations

import argparse

from verifier.rundata import jvm


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("setup", help="check Java and resolve the Kafka/Spark jars with Maven")
    p.add_argument("--no-spark", action="store_true", help="skip the Spark Kafka connector")
    p.add_argument("--no-tools", action="store_true", help="skip kafka-tools (benchmarks)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    jvm.require_java()
    sets = [jvm.broker_jars()]
    if not args.no_spark:
        sets.append(jvm.spark_kafka_jars())
    if not args.no_tools:
        sets.append(jvm.tools_jars())
    for s in sets:
        was = s.present
        jvm.resolve(s)
        note = "present" if was else "resolved"
        print(f"{s.profile:<12} {s.version:<8} {note:<9} {s.folder}")
    return 0
