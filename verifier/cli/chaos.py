"""`verifier chaos`: every delivery mode under every fault of a profile, side by side."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path

from verifier.cli.flagcheck import check_flags
from verifier.cli.helptext import HelpFormatter, epilog, examples, vocabulary
from verifier.cli.retry import add_flag as add_retry_flag
from verifier.orchestration.scenario import (
    SINKS,
    load_profiles,
    load_scenario,
    parse_duration,
    scaled,
    stretched,
)
from verifier.rundata.errors import EnvironmentProblem, UsageError
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.layout import RunLayout
from verifier.rundata.plan import security_of

#: set in the environment of a chaos run re-executed inside its own network namespace
IN_NETNS = "VERIFIER_CHAOS_NETNS"


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
                        "(default $KAFKA_VERSION or 4.1.1; its jars are resolved on first use)")
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
    p.add_argument("--base-port", type=int, default=9700,
                   help="local cluster ports (clients BASE+n, proxy BASE+300+n)")
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE, metavar="DIR",
                   help="the local cluster's folder")
    add_retry_flag(p)  # --retry-not-exercised N (verifier.cli.retry, issue 49)
    p.set_defaults(func=cmd_chaos)
    c = sub.add_parser("cleanup", help="stop what a chaos run that is no longer running "
                                       "left behind (processes, network namespaces)",
                       epilog=epilog(
                           ("verifier cleanup", "stop a killed run's processes, remove its "
                            "namespaces"),
                           ("verifier -v cleanup", "the same, logging each step")),
                       formatter_class=HelpFormatter)
    c.set_defaults(func=cmd_cleanup)


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


#: the local cluster of a chaos run; every tool's ledger of children is in LEDGERS
DEFAULT_STATE = PROJECT_ROOT / ".state" / "chaos"
LEDGERS = PROJECT_ROOT / ".state"


def cleanup(out=sys.stdout) -> list[str]:
    from verifier.harness.procs import cleanup_leftovers

    said = cleanup_leftovers(LEDGERS)
    for line in said:
        print(f"cleanup: {line}", file=out, flush=True)
    return said


def cmd_cleanup(args: argparse.Namespace) -> int:
    if not cleanup():
        print("cleanup: nothing left by an earlier run")
    return 0


class Interrupted(KeyboardInterrupt):
    """The tool was asked to stop by a signal."""


def _stop_on_signals() -> dict:
    """First SIGTERM/SIGINT/SIGHUP: stop load, heal, stop everything (short waits);
    a second one: SIGKILL every child and exit at once. Returns the handlers replaced."""
    from verifier.harness.procs import STOPPING, kill_all_now

    def handler(signum, _frame):
        name = signal.Signals(signum).name
        if STOPPING.is_set():
            kill_all_now()
            os._exit(128 + signum)
        STOPPING.set()
        print(f"\nverifier: {name}: stopping the run (a second signal stops at once)",
              file=sys.stderr, flush=True)
        raise Interrupted(name)

    return {sig: signal.signal(sig, handler)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}


def derive_mode(settings: dict, client: str = "kafka-python") -> str:
    """The preset whose promise a user's producer settings claim (DESIGN §4), on
    ``client``'s defaults (librdkafka: idempotence off unless set, docs/advise.md)."""
    if settings.get("transactional_id"):
        return "transactional"
    idem = settings.get("enable_idempotence")
    if idem is None and client == "librdkafka":
        idem = False
    acks_all = settings.get("acks", -1) in (-1, "all")
    retries = settings.get("retries", 1)
    if idem is True:
        return "idempotent"
    if idem is None and acks_all and retries != 0 and \
            settings.get("max_in_flight_requests_per_connection", 5) <= 5:
        return "idempotent"  # kafka-python's default since 3.0: idempotence on
    # retries claim at-least-once: acks=1 with retries runs there (the mode at-most-once
    # refuses retries) and its losses on a leader crash fail it, as they should
    return "at-least-once" if settings.get("acks", -1) != 0 and retries != 0 else "at-most-once"


def _scenarios(args: argparse.Namespace):
    profiles = load_profiles()
    if args.profile not in profiles:
        raise UsageError(f"unknown profile {args.profile!r}; known: {sorted(profiles)}")
    profile = profiles[args.profile]
    names = args.scenario or list(profile.scenarios)
    scenarios = [scaled(load_scenario(n), profile) for n in names]
    duration = parse_duration(args.duration) if args.duration else profile.duration_s
    if duration is not None:
        scenarios = [stretched(s, duration, profile.period_s) for s in scenarios]
    return profile, scenarios


def _client_arg(text: str) -> str:
    """``--client java:3.9.1``: checked as one entry of ``--clients``."""
    from producers.clients import parse_client

    try:
        return parse_client(text).text
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _clients(args: argparse.Namespace) -> tuple[str, ...]:
    """``--clients java:3.9.1,kafka-python`` as a tuple (empty: ``--client`` alone)."""
    if args.clients is None:
        return ()
    from producers.clients import parse_clients

    return parse_clients(args.clients)


def _versions(args: argparse.Namespace, profile) -> list[str]:
    """The broker versions to run one after another: ``--kafka-versions``, else the
    profile's list; ``[]`` for one run on ``--kafka-version`` (or KAFKA_VERSION)."""
    from verifier.rundata import jvm

    if args.kafka_versions and args.kafka_version:
        raise UsageError("--kafka-version and --kafka-versions: give one or the other")
    if args.kafka_version:
        jvm.parse_kafka_version(args.kafka_version)
        return []
    if args.kafka_versions:
        return jvm.parse_kafka_versions(args.kafka_versions)
    return [jvm.parse_kafka_versions(v)[0] for v in profile.kafka_versions]


def _known_bug_runs(args: argparse.Namespace, scenarios, versions: list[str],
                    clients: tuple[str, ...]):
    """The known-bugs profile's runs (``args.known_bug_plans``): the combinations of the
    bugs whose scenario is selected, on ``--kafka-versions`` and ``--clients`` if given.
    Returns every scenario variant (for the checks), the versions and the clients."""
    from verifier.orchestration.known_bugs import load_known_bugs, plan_known_bugs

    plans = plan_known_bugs(load_known_bugs(), {s.name: s for s in scenarios},
                            versions or None, list(clients) or None)
    if not plans:
        raise UsageError("known-bugs: no combination of the selected bugs is left on those "
                         "--kafka-versions and --clients")
    args.known_bug_plans = plans
    names = tuple(dict.fromkeys(c for p in plans for c in p.clients))
    for name in names:
        from producers.clients import check_client

        check_client(name)
    if len(names) == 1:
        args.client = names[0]
    return ([s for p in plans for s in p.scenarios], [p.kafka for p in plans],
            names if len(names) > 1 else ())


def _partition_capable() -> str | None:
    """Why this run cannot do network partitions, or None if it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables, per-broker users)"
    missing = [t for t in ("ip", "nft", "setpriv") if shutil.which(t) is None]
    return f"needs {', '.join(missing)}" if missing else None


def _rerun_in_namespace(args: argparse.Namespace) -> int:
    """Run this very command inside a fresh network namespace (loopback only).

    Everything of the run (cluster, proxy, generators, observer) then lives in the
    namespace, where nftables rules cannot touch the host; the namespace and whatever
    still runs in it are removed afterwards, also on Ctrl-C.
    """
    from verifier.harness.faults.netns import NetNamespace
    from verifier.harness.procs import record, spawn

    name = f"verifier-chaos-{os.getpid()}"
    record("netns", name=name)
    with NetNamespace(name) as ns:
        env = {**os.environ, IN_NETNS: "1"}
        argv = ns.argv([sys.executable, "-m", "verifier", *args.argv])
        proc = spawn("chaos-in-namespace", argv, env=env)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                proc.kill()
            return 130


def cmd_chaos(args: argparse.Namespace) -> int:
    from verifier.harness.procs import activate_ledger, release_ledger

    # from the first moment: a signal during the checks (a user pipeline's Spark check
    # takes seconds) says so and exits 130, as one during the run does
    previous = _stop_on_signals()
    try:
        prepared = _prepare(args)  # bad input fails here, before anything starts
        cleanup()  # leftovers of a dead run would hold ports and keep producing
        activate_ledger(LEDGERS)
        try:
            if prepared is None:
                return _rerun_in_namespace(args)
            from verifier.cli.advise import chaos_with_advice  # before and after the run

            return chaos_with_advice(args, prepared, _run)
        finally:
            release_ledger()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _spark_versions(text: str | None) -> list[str]:
    """``--spark-version`` (none: the project's PySpark only)."""
    from verifier.harness.spark_envs import parse_versions

    return parse_versions(text) if text is not None else []


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise EnvironmentProblem(f"--out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"--out {out}: cannot create the folder: "
                                 f"{exc.strerror}") from None
    if not os.access(out, os.W_OK):
        raise EnvironmentProblem(f"--out {out}: the folder is not writable")


def _check_reachable(bootstrap_servers: str, security_protocol: str = "PLAINTEXT",
                     timeout: float = 5.0) -> None:
    """One of the bootstrap servers answers as a Kafka broker (an ApiVersions request on a
    plaintext or SASL listener, which answer it before authentication; a TCP connection
    on a TLS one), or exit 2 in one line saying what each server did."""
    import socket

    from verifier.harness.kafka_wire import not_kafka

    tried = []
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                          timeout=timeout) as sock:
                if security_protocol.upper() in ("SSL", "SASL_SSL"):
                    return
                answer = not_kafka(sock)
                if answer is None:
                    return
                tried.append(f"{server.strip()} (answered, but not as a Kafka broker: "
                             f"{answer})")
        except (OSError, ValueError) as exc:
            tried.append(f"{server.strip()} ({getattr(exc, 'strerror', None) or exc})")
    raise EnvironmentProblem(f"--bootstrap-servers: no broker reachable: {', '.join(tried)}")


def _prepare(args: argparse.Namespace):
    """Every input checked, in well under a second and before any process or JVM starts:
    usage errors (64, one message), then the environment (2, one line). Returns what the
    run needs, or None when the run is to be re-executed in its own network namespace."""
    from producers.properties import UserConfig, read_user_config
    from verifier.harness.environment import ExternalEnvironment, LocalEnvironment
    from verifier.orchestration.orchestrator import RunOptions, spark_env, validate_scenario
    from verifier.rundata import jvm

    profile, scenarios = _scenarios(args)
    check_flags(args, profile)  # a written flag that would do nothing: 64 (issue 49)
    from streaming.session import CHAOS_CONF, SPARK_CONF_ENV

    spark_conf = dict(CHAOS_CONF)  # the tool's defaults; the user's settings replace them
    for item in args.spark_conf:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--spark-conf {item!r}: expected KEY=VALUE")
        spark_conf[key.strip()] = value
    # every Spark application of the run, children included, reads it
    os.environ[SPARK_CONF_ENV] = json.dumps(spark_conf)
    user_mode = None
    clients = _clients(args)
    if not clients and args.client == "kafka-python" and len(profile.clients) > 1:
        args.clients = ",".join(profile.clients)  # the profile's clients side by side
        clients = _clients(args)
    elif not clients and profile.clients and args.client == "kafka-python":
        args.client = profile.clients[0]
    versions = _versions(args, profile)
    if profile.known_bugs:  # the bugs' combinations name the versions and clients
        scenarios, versions, clients = _known_bug_runs(args, scenarios, versions, clients)
    user = UserConfig({}, {})
    if args.producer_config is not None:  # the user's column runs on the first client
        first = (clients or (args.client,))[0].split(":")[0]  # java:3.9.1 is java's file
        user = read_user_config(args.producer_config, first)
        user_mode = derive_mode(user.settings, first)
    settings = user.settings
    # the connection settings every client of the run uses (in the plan, secrets redacted)
    client_config = security_of(settings)
    in_netns = os.environ.get(IN_NETNS) == "1"
    docker = args.environment == "docker"
    if docker and args.bootstrap_servers:
        raise UsageError("--environment docker starts its own cluster; it does not go with "
                         "--bootstrap-servers")
    if args.keep_topics and not args.bootstrap_servers:
        raise UsageError("--keep-topics goes with --bootstrap-servers (a cluster the tool "
                         "starts is removed with its topics when the run ends)")
    if (args.kafka_version or versions) and (docker or args.bootstrap_servers):
        raise UsageError("--kafka-version(s) and the versions profile choose the local "
                         "cluster's broker; they do not go with --bootstrap-servers or "
                         "--environment docker")
    if args.bootstrap_servers:
        env = ExternalEnvironment(args.bootstrap_servers, client_config,
                                  keep_topics=args.keep_topics)
    elif docker:
        from verifier.harness.containers.environment import DockerEnvironment

        env = DockerEnvironment(args.state_dir.resolve(), base_port=args.base_port)
    else:
        env = LocalEnvironment(args.state_dir.resolve(), base_port=args.base_port,
                               partitions=in_netns,
                               kafka_version=(versions[0] if versions else args.kafka_version))
    pipelines: tuple = ()
    if args.pipeline is not None or args.pipeline_guarantee is not None:
        from streaming.pipelines.loader import split_specs
        from verifier.orchestration.pipelines import plan_pipelines

        pipelines = tuple(plan_pipelines(split_specs(args.pipeline or ""),
                                         args.pipeline_guarantee,
                                         _spark_versions(args.spark_version)))
    elif args.spark_version is not None:
        raise UsageError("--spark-version runs the pipelines under test: name them with "
                         "--pipeline")
    opts = RunOptions(out=args.out, seed=args.seed, sink=args.sink,
                      spark_master=args.spark_master, spark_cluster=args.spark_cluster,
                      user_config=args.producer_config,
                      user_mode=user_mode, user_settings=settings,
                      user_overrides=user.overrides, user_notes=user.notes,
                      profile=profile.name, extra_env=spark_env(), selftest=args.selftest,
                      fail_fast=args.fail_fast,
                      client=args.client, clients=clients, kafka_versions=tuple(versions),
                      pipelines=pipelines, repeat=args.repeat)
    problems: list[str] = []
    for scenario in scenarios:
        for problem in validate_scenario(scenario, opts, env):
            if problem not in problems:  # the same setting in every scenario: once
                problems.append(problem)
    if problems:
        raise UsageError("; ".join(problems))
    state = args.state_dir.resolve()
    if not args.bootstrap_servers and args.out.resolve().is_relative_to(state):
        raise UsageError(f"--out {args.out} is inside --state-dir {args.state_dir}, which "
                         "holds the cluster's data and is deleted when the run ends: the "
                         "run folders would go with it; choose an --out elsewhere")
    _check_out(args.out)
    jvm.choose_java()
    if pipelines:  # the Delta jars the pipelines' sessions load (once, from Maven Central)
        jvm.resolve(jvm.delta_jars())
        from verifier.harness.spark_envs import ensure

        for version in _spark_versions(args.spark_version):  # installed once, or an error
            ensure(version)
        from verifier.orchestration.pipelines import check_user_pipelines

        check_user_pipelines(list(pipelines), env={**os.environ, **spark_env()})
    from producers.clients import require_built

    for client in opts.clients or (args.client,):
        require_built(client)
    if args.bootstrap_servers:
        _check_reachable(args.bootstrap_servers,
                         client_config.get("security_protocol", "PLAINTEXT"))
    if docker:
        from verifier.harness.containers.engine import require_engine

        require_engine()  # one line (exit 2) when no engine answers
    if user_mode is not None:
        print(f"your producer config {args.producer_config} claims: {user_mode}")
        for note in user.notes:
            print(f"your producer config: {note}")
    wants_partition = any(f.get("kind") == "network-partition"
                          for s in scenarios for f in s.faults)
    if wants_partition and not args.bootstrap_servers and not in_netns and not docker:
        why_not = _partition_capable()
        if why_not is None:
            return None
        print(f"network-partition faults are skipped: {why_not}")
    if args.bootstrap_servers:
        print(f"external cluster {args.bootstrap_servers}: proxy and broker faults are "
              "skipped (they need the local cluster); process faults still run")
    return profile, scenarios, env, opts


def _run(args: argparse.Namespace, profile, scenarios, env, opts) -> int:
    from streaming.session import spark_session
    from verifier.orchestration.chaos import run_matrix

    seeds = (f"seeds {args.seed}..{args.seed + args.repeat - 1}, {args.repeat} runs each"
             if args.repeat > 1 else f"seed {args.seed}")
    print(f"profile {profile.name}: {', '.join(s.name for s in scenarios)} "
          f"({seeds}, output {args.out})", flush=True)
    # The verification's Spark starts while the cluster and the first observer do (its
    # first use is the first run's verify); the JVM's start-up lines and log4j output go to
    # OUT/logs/, not the terminal. A daemon thread: a signal meanwhile never waits for it.
    spark: Future = Future()

    def start_spark() -> None:
        try:
            spark.set_result(spark_session(app_name="verifier-chaos", master=args.spark_master,
                                           log_file=RunLayout(args.out).spark_log))
        except BaseException as exc:  # noqa: BLE001 - raised where the session is used
            spark.set_exception(exc)

    threading.Thread(target=start_spark, name="verifier-spark", daemon=True).start()
    from verifier.harness.procs import STOPPING

    try:
        plans = getattr(args, "known_bug_plans", None)
        if plans:
            from verifier.harness.environment import LocalEnvironment
            from verifier.orchestration.known_bugs import run_known_bugs

            def make_known_env(version: str):
                return LocalEnvironment(env.state_dir, base_port=args.base_port,
                                        partitions=env.partitions, kafka_version=version)

            return run_known_bugs(make_known_env, plans, opts, spark)
        if opts.kafka_versions:
            from verifier.harness.environment import LocalEnvironment
            from verifier.orchestration.chaos import run_versions

            def make_env(version: str):
                return LocalEnvironment(env.state_dir, base_port=args.base_port,
                                        partitions=env.partitions, kafka_version=version)

            return run_versions(make_env, list(opts.kafka_versions), scenarios, opts, spark)
        return run_matrix(env, scenarios, opts, spark)
    finally:
        # when stopped by a signal its JVM dies with the tool
        if not STOPPING.is_set() and spark.done() and spark.exception() is None:
            spark.result().stop()
