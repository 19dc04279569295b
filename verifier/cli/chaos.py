"""`verifier chaos`: every delivery mode under every fault of a profile, side by side."""

from __future__ import annotations

import argparse
from dataclasses import fields, replace
from pathlib import Path

from verifier import api
from verifier.cli.cleanup import add_cluster_cleanup
from verifier.cli.flagcheck import check_flags
from verifier.cli.helptext import HelpFormatter, epilog, examples, vocabulary
from verifier.cli.plan import add_safety_flags, cmd_plan
from verifier.cli.retry import add_flag as add_retry_flag
from verifier.orchestration.scenario import SINKS, load_profiles
from verifier.rundata import jvm
from verifier.rundata.apps import DEFAULT_INSTANCES as DEFAULT_APP_INSTANCES
from verifier.rundata.apps import GUARANTEES as APP_GUARANTEES
from verifier.rundata.apps import ORACLES as APP_ORACLES
from verifier.rundata.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chaos", help="run the fault scenarios against every delivery mode and "
                                     "report the verdicts side by side",
                       description="Run the fault scenarios of a profile against every "
                                   "delivery mode, side by side, and report the verdicts.",
                       epilog=_epilog(),
                       formatter_class=_HelpFormatter)
    p.add_argument("--profile", default="full", help="which scenarios, how long (below)")
    p.add_argument("--scenario", action="append", default=[], metavar="NAME|PATH.toml",
                   help="run only this scenario, by name or your own scenario file "
                        "(repeatable)")
    p.add_argument("--seed", type=int, default=1, help="seeds fault times and proxy rules")
    p.add_argument("--repeat", type=run_count(" per scenario"), default=1, metavar="N",
                   help="run each scenario N times, run k with seed SEED+k-1, each in its "
                        "own folder (OUT/<scenario>/<time>-rep<k>of<N>); each cell shows "
                        "its outcomes (FAIL 2/3 · PASS 1/3), the exit code the worst")
    p.add_argument("--producer-config", type=Path, default=None, metavar="FILE",
                   help="your Java-style producer properties, run as an extra column")
    p.add_argument("--client", default="kafka-python", type=_client_arg,
                   help="the producer client every column's generator runs: kafka-python, "
                        "java (Kafka's Java producer at KAFKA_CLIENTS_VERSION) or "
                        "librdkafka, optionally at a version (java:3.9.1)")
    p.add_argument("--clients", default=None, metavar="C1,C2",
                   help="several clients side by side, one column per mode and client "
                        "(idempotent/java), same faults: e.g. java,kafka-python; a client "
                        "may name its version (java:3.9.1: kafka-clients, librdkafka:2.6.1: "
                        "confluent-kafka), built or installed on first use")
    p.add_argument("--kafka-version", default=None, metavar="VERSION",
                   help="the local cluster's broker release, any KRaft one from 3.3 to 4.x "
                        f"(default $KAFKA_VERSION or {jvm.DEFAULT_KAFKA_VERSION}; its jars are "
                        "resolved on first use)")
    p.add_argument("--kafka-versions", default=None, metavar="V1,V2",
                   help="run the scenarios on a fresh local cluster of each release in turn "
                        "and print one grid, version x client x mode (the versions profile "
                        "names its own list)")
    p.add_argument("--bootstrap-servers", default=None,
                   help="an external cluster (default: start the embedded local cluster); "
                        "the topics the run creates there are deleted when it ends")
    p.add_argument("--keep-topics", action="store_true",
                   help="with --bootstrap-servers: keep the run's topics (and their "
                        "records) on the cluster")
    p.add_argument("--environment", choices=("embedded", "docker"), default="embedded",
                   help="where the cluster runs: embedded (one JVM per broker on this "
                        "machine) or docker (containers of an image built here from the "
                        "same jars, through testcontainers; needs a Docker engine and the "
                        "docker extra)")
    p.add_argument("--spark-master", default=None, help="Spark master (default local[2]); "
                   "on a standalone master (spark://) each of the tool's applications takes "
                   "one core unless --spark-conf spark.cores.max=N says otherwise")
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for every Spark application the tool starts "
                        "(repeatable)")
    p.add_argument("--spark-cluster", choices=("standalone",), default=None,
                   help="run the pipelines under test on a Spark standalone cluster the run "
                        "starts (a master and two workers from the installed PySpark), where "
                        "executors can be lost: the executor-kill and worker-kill faults "
                        "(scenario executor-loss)")
    p.add_argument("--sink", choices=SINKS, default=None,
                   help="the observer's sink (default: each scenario's own)")
    p.add_argument("--pipeline", default=None, metavar="P1,P2",
                   help="Structured Streaming pipelines under test, each a column next to "
                        "the producer modes, judged from input to output: presets "
                        "kafka-sink, file, delta, foreach-batch, foreach-batch-idempotent, "
                        "dedup-state (stateful), "
                        "or your own FILE.py[:function] / module:function (README)")
    p.add_argument("--pipeline-guarantee", choices=("exactly-once", "at-least-once"),
                   default=None, help="the guarantee every --pipeline is judged by "
                                      "(default: each one's GUARANTEE)")
    p.add_argument("--app", default=None, metavar="A1,A2 | CMD",
                   help="consumer applications under test, each N instances in one "
                        "consumer group reading the run's topics and writing an output "
                        "topic, a column per isolation level judged from input to output: "
                        "presets copier-commit-before, copier-commit-after, "
                        "copier-transactional, or your own program as one command "
                        "(\"java -jar svc.jar\"), given the VERIFIER_* environment "
                        "(docs/applications.md)")
    p.add_argument("--app-guarantee", choices=APP_GUARANTEES, default=None,
                   help="what your --app command claims (the presets claim their own)")
    p.add_argument("--app-oracle", choices=APP_ORACLES, default=None,
                   help="how your --app command's output is judged: identity (default: "
                        "each input record's value passes through) or reference (the final "
                        "value per key against the same command run without faults over "
                        "the same input; docs/applications.md)")
    p.add_argument("--app-instances", type=int, default=None, metavar="N",
                   help=f"instances of each --app (default {DEFAULT_APP_INSTANCES})")
    p.add_argument("--group-protocol", default=None, metavar="classic,consumer",
                   help="run each consumer-group --app once per group protocol, a column "
                        "each (app:NAME[consumer]): classic, and/or consumer (KIP-848; "
                        "brokers 4.0+, the Java presets; docs/applications.md)")
    p.add_argument("--spark-version", default=None, metavar="V1,V2",
                   help="run every --pipeline on each of these PySpark versions, a column "
                        "per version side by side (e.g. 3.5.7,4.2.0); each installed on "
                        "first use into .spark-envs/<version> with its Delta and Kafka "
                        "connector jars; the observer keeps the project's own PySpark")
    p.add_argument("--out", type=Path, default=Path("runs"), help="output folder")
    p.add_argument("--fail-fast", action="store_true",
                   help="stop the load at the first forbidden anomaly the observer's live "
                        "checks report, heal, drain and report FAIL with the evidence; "
                        "skip the profile's remaining scenarios")
    p.add_argument("--duration", default=None, metavar="30m",
                   help="run each scenario this long (s, m, h), its faults repeating every "
                        "period of the scenario's own length (the soak profile: 20m)")
    p.add_argument("--selftest", action="store_true",
                   help="after each scenario's verdict, inject every anomaly and legal near "
                        "miss into copies of its run and show that the checks catch each "
                        "(`verifier selftest`; minutes per scenario)")
    p.add_argument("--base-port", type=int, default=api.DEFAULT_BASE_PORT,
                   help="local cluster ports (clients BASE+n, proxy BASE+300+n)")
    p.add_argument("--state-dir", type=Path, default=api.DEFAULT_STATE, metavar="DIR",
                   help="the local cluster's folder")
    add_retry_flag(p)  # --retry-not-exercised N (verifier.cli.retry, issue 49)
    add_safety_flags(p)  # --plan, --use-my-ids (verifier.cli.plan)
    p.set_defaults(func=cmd_chaos)
    c = sub.add_parser("cleanup", help="stop what a chaos run that is no longer running "
                                       "left behind (processes, network namespaces)",
                       epilog=epilog(
                           ("verifier cleanup", "stop a killed run's processes, remove its "
                            "namespaces"),
                           ("verifier -v cleanup", "the same, logging each step")),
                       formatter_class=HelpFormatter)
    add_cluster_cleanup(c, cmd_cleanup)  # --bootstrap-servers: a killed run's topics


def run_count(per: str = ""):
    """An argparse type for a number of runs (``--repeat N``, shrink's ``--calibrate N``):
    a whole number, 1 or more; anything else a usage error (64) before anything starts."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"expected a whole number of runs{per}, "
                                             f"1 or more: {text!r}")
        return n

    return parse


class _HelpFormatter(argparse.RawDescriptionHelpFormatter,
                     argparse.ArgumentDefaultsHelpFormatter):
    """The epilog as written, every option with its default."""


def _epilog() -> str:
    from verifier.orchestration.scenario import available

    lines = ["scenarios (--scenario NAME, or your own PATH.toml):",
             "  " + ", ".join(available()), "profiles (--profile NAME):"]
    try:
        for name, prof in load_profiles().items():
            lines.append(f"  {name}: {', '.join(prof.scenarios)} (time x{prof.time_scale:g}, "
                         f"rate x{prof.rate_scale:g})")
    except (OSError, ValueError) as exc:
        lines.append(f"  (cannot read the profiles: {exc})")
    lines += [*vocabulary(),
              "a dead run's leftovers: `verifier cleanup` (the next chaos run does it too)",
              "",
              examples(
                  ("verifier chaos --profile quick", "three scenarios, minutes: every "
                   "delivery mode side by side"),
                  ("verifier chaos --scenario ack-loss --repeat 3", "one scenario three "
                   "times (seeds 1, 2, 3)"),
                  ("verifier chaos --scenario ack-loss --producer-config "
                   "my-producer.properties", "your producer settings as an extra column"))]
    return "\n".join(lines)


def cmd_cleanup(args: argparse.Namespace) -> int:
    if not api.cleanup():
        print("cleanup: nothing left by an earlier run")
    return 0


def _client_arg(text: str) -> str:
    """``--client java:3.9.1``: checked as one entry of ``--clients``."""
    from producers.clients import parse_client

    try:
        return parse_client(text).text
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def request_of(args: argparse.Namespace) -> api.ChaosRequest:
    """The flags of `verifier chaos` as the API's request (each flag its field)."""
    values = {f.name: getattr(args, f.name) for f in fields(api.ChaosRequest)
              if f.name != "scenarios"}
    return api.ChaosRequest(**{**values, "scenarios": tuple(args.scenario),
                               "spark_conf": tuple(args.spark_conf)})


def cmd_chaos(args: argparse.Namespace) -> int:
    from verifier.cli.advise import chaos_with_advice  # the advice before and after the run

    def run(prepared: api.Prepared) -> int:
        args.known_bug_plans = prepared.known_bug_plans  # not compared with the advice
        parts = (prepared.profile, prepared.scenarios, prepared.env, prepared.opts)

        def run_parts(_args, profile, scenarios, env, opts) -> int:
            # the advice's wrapper may hand on other parts (options of a re-run), and
            # takes every run's finished document back (its comparison with the advice)
            return api.run_chaos(replace(prepared, profile=profile, scenarios=scenarios,
                                         env=env, opts=opts),
                                 collect=getattr(_args, "collect", None),
                                 advice=getattr(_args, "advice", None))

        return chaos_with_advice(args, parts, run_parts)

    if args.plan:  # what the run would do to the cluster, before it does anything
        return cmd_plan(args, lambda: api.prepare(
            request_of(args), check=lambda profile: check_flags(args, profile)))
    # a written flag that would do nothing: 64 (issue 49), once the profile is known
    return api.run_prepared(request_of(args), args.argv, run,
                            check=lambda profile: check_flags(args, profile))
