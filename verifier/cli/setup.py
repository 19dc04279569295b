"""`verifier setup`: resolve the JVM artifacts (idempotent)."""

from __future__ import annotations

import argparse

from verifier.cli.helptext import HelpFormatter, epilog
from verifier.rundata import jvm


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("setup", help="check Java, resolve the Kafka/Spark jars and build the Java "
                                      "generator with Maven",
                       epilog=epilog(
                           ("verifier setup", "everything: broker, Spark connector, tools, "
                            "the Java generator"),
                           ("verifier setup --no-spark --no-java-generator --no-java-apps",
                            "only what a producer-only chaos run needs"),
                           ("verifier setup --kafka-versions 3.5.2,3.6.2", "also these broker "
                            "releases, for chaos --kafka-versions"),
                           ("verifier setup --clients java:3.9.1,librdkafka:2.0.2", "also "
                            "these client versions, for chaos --clients")),
                       formatter_class=HelpFormatter)
    p.add_argument("--no-spark", action="store_true", help="skip the Spark Kafka connector")
    p.add_argument("--no-tools", action="store_true", help="skip kafka-tools (benchmarks)")
    p.add_argument("--no-java-generator", action="store_true",
                   help="skip building the Java generator (producers/java, --client java)")
    p.add_argument("--no-java-apps", action="store_true",
                   help="skip building the Java application presets (producers/java-apps: "
                        "java-copier-*, streams-*; else built at their first --app run)")
    p.add_argument("--kafka-versions", default=None, metavar="V1,V2",
                   help="also resolve the broker jars of these releases (KRaft 3.3 to 4.x), "
                        "each into .jars/broker-<version>, side by side")
    p.add_argument("--clients", default=None, metavar="C1,C2",
                   help="also build or install these client versions (java:<kafka-clients>, "
                        "librdkafka:<confluent-kafka>), as chaos --clients does on first use")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    jvm.require_java()
    sets = [jvm.broker_jars()]
    for version in jvm.parse_kafka_versions(args.kafka_versions) if args.kafka_versions else []:
        if version != sets[0].version:
            sets.append(jvm.broker_jars(version))
    if not args.no_spark:
        sets.append(jvm.spark_kafka_jars())
        sets.append(jvm.delta_jars())  # the Delta pipelines under test (issue 21)
    if not args.no_tools:
        sets.append(jvm.tools_jars())
    for s in sets:
        was = s.present
        jvm.resolve(s)
        note = "present" if was else "resolved"
        print(f"{s.profile:<14} {s.version:<8} {note:<9} {s.folder}")
    if not args.no_java_generator:
        gen = jvm.java_generator_jars()
        was = jvm.java_generator_built(gen)
        jvm.build_java_generator(gen)
        note = "present" if was else "built"
        print(f"{gen.profile:<14} {gen.version:<8} {note:<9} {gen.folder}")
    if not args.no_java_apps:
        apps = jvm.java_apps_jars()
        was = jvm.project_built(jvm.APPS_PROJECT, apps)
        jvm.build_project(jvm.APPS_PROJECT, apps)
        note = "present" if was else "built"
        print(f"{apps.profile:<14} {apps.version:<8} {note:<9} {apps.folder}")
    if not args.no_spark:
        from streaming.class_share import build

        path, made = build()  # every Spark driver's start: ~3 s instead of ~7 here
        print(f"{'spark-cds':<14} {path.name.split('-')[1]:<8} "
              f"{'dumped' if made else 'present':<9} {path}")
    if args.clients:
        from producers.clients import parse_clients, require_built

        for client in parse_clients(args.clients):
            require_built(client)
            print(f"{'client':<14} {client} ready")
    return 0
