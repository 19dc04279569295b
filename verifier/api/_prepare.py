"""Every input of a chaos run checked before any process or JVM starts (issue 17): usage
errors first (exit 64, one message), then the environment (exit 2, one line). What comes
out is everything the run needs, :class:`Prepared`."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from verifier.api._request import ChaosRequest
from verifier.api._user import UserProducer, read_user_producer
from verifier.orchestration.planning import RunOptions, validate_scenario
from verifier.orchestration.scenario import (
    Profile,
    Scenario,
    load_profiles,
    load_scenario,
    parse_duration,
    scaled,
    stretched,
)
from verifier.rundata.errors import EnvironmentProblem, UsageError
from verifier.rundata.naming import id_notes
from verifier.rundata.plan import security_of

#: set in the environment of a run re-executed inside its own network namespace
IN_NETNS = "VERIFIER_CHAOS_NETNS"


@dataclass(frozen=True)
class Prepared:
    """A checked request: the scenarios as they will run, the environment they run on (not
    started yet) and the run's options."""

    request: ChaosRequest
    profile: Profile
    scenarios: list[Scenario]
    env: object
    opts: RunOptions
    #: the known-bugs profile's runs (verifier.orchestration.known_bugs.KnownBugPlan)
    known_bug_plans: tuple = ()
    #: network partitions need the run inside a network namespace of its own: re-execute
    #: the command there (:func:`verifier.api.rerun_in_namespace`) instead of running it
    needs_namespace: bool = False


def prepare(request: ChaosRequest, check: Callable[[Profile], None] | None = None
            ) -> Prepared:
    """Check every input of ``request`` in well under a second, before anything starts:
    a :class:`UsageError` (64) for bad input, an :class:`EnvironmentProblem` (2) for what
    the machine lacks. ``check(profile)``: the caller's own checks once the profile is
    known (the command line's: a written flag the profile leaves without effect). Sets
    the Spark settings every Spark application of the run reads."""
    profile, scenarios = _scenarios(request)
    if check is not None:
        check(profile)
    _export_spark_conf(request.spark_conf)
    client, clients = _clients(request, profile)
    versions = _versions(request, profile)
    plans: tuple = ()
    if profile.known_bugs:  # the bugs' combinations name the versions and clients
        plans, scenarios, versions, names = _known_bug_runs(scenarios, versions, clients,
                                                            _loader(request, profile))
        clients = names if len(names) > 1 else ()
        if len(names) == 1:
            client = names[0]
    user = None
    if request.producer_config is not None:  # the user's column runs on the first client
        user = read_user_producer(request.producer_config, (clients or (client,))[0])
        # how the run names the file's ids on the cluster (verifier.rundata.naming)
        user.config.notes.extend(id_notes(user.config.settings, request.use_my_ids))
    settings = user.config.settings if user else {}
    # the connection settings every client of the run uses (in the plan, secrets redacted)
    client_config = security_of(settings)
    in_netns = os.environ.get(IN_NETNS) == "1"
    _check_cluster_flags(request, versions)
    env = _environment(request, client_config, versions, in_netns)
    pipelines = _pipelines(request)
    opts = _options(request, profile, user, settings, client, clients, versions, pipelines)
    if plans:  # each plan's scenarios with its application column (issue 50)
        from verifier.orchestration.known_bug_apps import with_app

        for plan in plans:
            _check_scenarios(plan.scenarios, with_app(opts, plan.app), env)
    else:
        _check_scenarios(scenarios, opts, env)
    _check_out(request)
    _check_machine(request, opts, env, client, client_config)
    if user is not None:
        print(f"your producer config {request.producer_config} claims: {user.claimed}")
        for note in user.config.notes:
            print(f"your producer config: {note}")
    needs_namespace = _needs_namespace(request, scenarios, in_netns)
    if request.bootstrap_servers:
        print(f"external cluster {request.bootstrap_servers}: proxy and broker faults are "
              "skipped (they need the local cluster); process faults still run")
    return Prepared(request, profile, scenarios, env, opts, plans, needs_namespace)


def _scenarios(request: ChaosRequest) -> tuple[Profile, list[Scenario]]:
    profiles = load_profiles()
    if request.profile not in profiles:
        raise UsageError(f"unknown profile {request.profile!r}; known: {sorted(profiles)}")
    profile = profiles[request.profile]
    names = list(request.scenarios) or list(profile.scenarios)
    return profile, [_loader(request, profile)(n) for n in names]


def _loader(request: ChaosRequest, profile: Profile):
    """A scenario by name, scaled and stretched as the profile and ``--duration`` say."""
    duration = parse_duration(request.duration) if request.duration else profile.duration_s

    def load(name: str) -> Scenario:
        scenario = scaled(load_scenario(name), profile)
        return scenario if duration is None else \
            stretched(scenario, duration, profile.period_s)
    return load


def _export_spark_conf(items: tuple[str, ...]) -> None:
    from streaming.session import CHAOS_CONF, SPARK_CONF_ENV

    spark_conf = dict(CHAOS_CONF)  # the tool's defaults; the user's settings replace them
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--spark-conf {item!r}: expected KEY=VALUE")
        spark_conf[key.strip()] = value
    # every Spark application of the run, children included, reads it
    os.environ[SPARK_CONF_ENV] = json.dumps(spark_conf)


def _clients(request: ChaosRequest, profile: Profile) -> tuple[str, tuple[str, ...]]:
    """The client of every column and, when several run side by side, their tuple
    (``--clients``, else the profile's clients when ``--client`` is left at its default)."""
    from producers.clients import parse_clients

    client = request.client
    clients = parse_clients(request.clients) if request.clients is not None else ()
    if not clients and client == "kafka-python" and len(profile.clients) > 1:
        clients = parse_clients(",".join(profile.clients))  # side by side
    elif not clients and profile.clients and client == "kafka-python":
        client = profile.clients[0]
    return client, clients


def _versions(request: ChaosRequest, profile: Profile) -> list[str]:
    """The clusters to run one after another: ``--kafka-versions``, else the profile's
    list, each a broker version or a version at feature levels
    (``4.4.0+transaction.version=0``); ``[]`` for one run on ``--kafka-version`` (or
    KAFKA_VERSION)."""
    from verifier.harness.features import parse_clusters
    from verifier.rundata import jvm

    if request.kafka_versions and request.kafka_version:
        raise UsageError("--kafka-version and --kafka-versions: give one or the other")
    if request.kafka_version:
        jvm.parse_kafka_version(request.kafka_version)
        return []
    if request.kafka_versions:
        return parse_clusters(request.kafka_versions.split(","))
    return parse_clusters(list(profile.kafka_versions)) if profile.kafka_versions else []


def _known_bug_runs(scenarios: list[Scenario], versions: list[str],
                    clients: tuple[str, ...], load=load_scenario):
    """The known-bugs profile's runs: the combinations of the bugs whose scenario is
    selected, on ``--kafka-versions`` and ``--clients`` if given (``load``: a
    combination's own schedule, by name). Returns the plans, every scenario variant (for
    the checks), the versions and every client the plans name."""
    from producers.clients import check_client
    from verifier.harness.features import split_cluster
    from verifier.orchestration.known_bugs import load_known_bugs, plan_known_bugs

    # the bugs' combinations name their own feature levels: only the versions filter them
    versions = list(dict.fromkeys(split_cluster(v)[0] for v in versions))
    plans = plan_known_bugs(load_known_bugs(), {s.name: s for s in scenarios},
                            versions or None, list(clients) or None, load)
    if not plans:
        raise UsageError("known-bugs: no combination of the selected bugs is left on those "
                         "--kafka-versions and --clients")
    names = tuple(dict.fromkeys(c for p in plans for c in p.clients))
    for name in names:
        check_client(name)
    return tuple(plans), [s for p in plans for s in p.scenarios], [p.kafka for p in plans], names


def _check_cluster_flags(request: ChaosRequest, versions: list[str]) -> None:
    docker = request.environment == "docker"
    if docker and request.bootstrap_servers:
        raise UsageError("--environment docker starts its own cluster; it does not go with "
                         "--bootstrap-servers")
    if request.keep_topics and not request.bootstrap_servers:
        raise UsageError("--keep-topics goes with --bootstrap-servers (a cluster the tool "
                         "starts is removed with its topics when the run ends)")
    if (request.kafka_version or versions) and (docker or request.bootstrap_servers):
        raise UsageError("--kafka-version(s) and the versions profile choose the local "
                         "cluster's broker; they do not go with --bootstrap-servers or "
                         "--environment docker")


def _environment(request: ChaosRequest, client_config: dict, versions: list[str],
                 in_netns: bool):
    """Where the run happens (not started): an external cluster, containers, or the
    embedded local cluster (partitions possible only inside a namespace of its own)."""
    from verifier.harness.environment import ExternalEnvironment, LocalEnvironment
    from verifier.harness.features import split_cluster

    if request.bootstrap_servers:
        return ExternalEnvironment(request.bootstrap_servers, client_config,
                                   keep_topics=request.keep_topics)
    if request.environment == "docker":
        from verifier.harness.containers.environment import DockerEnvironment

        return DockerEnvironment(request.state_dir.resolve(), base_port=request.base_port)
    return LocalEnvironment(request.state_dir.resolve(), base_port=request.base_port,
                            partitions=in_netns,
                            kafka_version=(split_cluster(versions[0])[0] if versions
                                           else request.kafka_version))


def _spark_versions(text: str | None) -> list[str]:
    """``--spark-version`` (none: the project's PySpark only)."""
    from verifier.harness.spark_envs import parse_versions

    return parse_versions(text) if text is not None else []


def _pipelines(request: ChaosRequest) -> tuple:
    if request.pipeline is not None or request.pipeline_guarantee is not None:
        from streaming.pipelines.loader import split_specs
        from verifier.orchestration.pipeline_plan import plan_pipelines

        return tuple(plan_pipelines(split_specs(request.pipeline or ""),
                                    request.pipeline_guarantee,
                                    _spark_versions(request.spark_version)))
    if request.spark_version is not None:
        raise UsageError("--spark-version runs the pipelines under test: name them with "
                         "--pipeline")
    return ()


def _options(request: ChaosRequest, profile: Profile, user: UserProducer | None,
             settings: dict, client: str, clients: tuple[str, ...], versions: list[str],
             pipelines: tuple) -> RunOptions:
    from verifier.orchestration.orchestrator import spark_env

    return RunOptions(out=request.out, seed=request.seed, sink=request.sink,
                      spark_master=request.spark_master, spark_cluster=request.spark_cluster,
                      user_config=request.producer_config,
                      user_mode=user.claimed if user else None, user_settings=settings,
                      user_overrides=user.config.overrides if user else {},
                      user_notes=user.config.notes if user else [],
                      profile=profile.name, extra_env=spark_env(), selftest=request.selftest,
                      fail_fast=request.fail_fast, client=client, clients=clients,
                      kafka_versions=tuple(versions), pipelines=pipelines,
                      repeat=request.repeat, use_my_ids=request.use_my_ids,
                      apps=_apps(request))


def _apps(request: ChaosRequest) -> tuple:
    """``--app`` as the applications under test (checked before: verifier.cli.flagcheck)."""
    if request.app is None:
        return ()
    import sys

    from verifier.rundata import app_groups, jvm
    from verifier.rundata.apps import DEFAULT_INSTANCES, java_presets, plan_apps

    java = jvm.java_executable() if java_presets(request.app) else "java"
    planned = plan_apps(request.app, request.app_guarantee,
                        request.app_instances or DEFAULT_INSTANCES, python=sys.executable,
                        java=java, classpath=jvm.java_apps_jars().classpath(),
                        oracle=request.app_oracle)
    protocols = (app_groups.parse_protocols(request.group_protocol)
                 if request.group_protocol else ())
    return tuple(app_groups.expand(planned, protocols))


def _check_scenarios(scenarios: list[Scenario], opts: RunOptions, env) -> None:
    problems: list[str] = []
    for scenario in scenarios:
        for problem in validate_scenario(scenario, opts, env):
            if problem not in problems:  # the same setting in every scenario: once
                problems.append(problem)
    if problems:
        raise UsageError("; ".join(problems))


def _check_out(request: ChaosRequest) -> None:
    out = request.out
    if not request.bootstrap_servers and out.resolve().is_relative_to(
            request.state_dir.resolve()):
        raise UsageError(f"--out {out} is inside --state-dir {request.state_dir}, which "
                         "holds the cluster's data and is deleted when the run ends: the "
                         "run folders would go with it; choose an --out elsewhere")
    if out.exists() and not out.is_dir():
        raise EnvironmentProblem(f"--out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"--out {out}: cannot create the folder: "
                                 f"{exc.strerror}") from None
    if not os.access(out, os.W_OK):
        raise EnvironmentProblem(f"--out {out}: the folder is not writable")


def _check_machine(request: ChaosRequest, opts: RunOptions, env, client: str,
                   client_config: dict) -> None:
    """Java, the pipelines' jars and Spark versions, the clients' builds, the external
    cluster and the Docker engine: each present, or one line (exit 2)."""
    from producers.clients import require_built, require_java_apps
    from verifier.rundata import jvm
    from verifier.rundata.apps import java_presets

    jvm.choose_java()
    if opts.pipelines:  # the Delta jars the pipelines' sessions load (once, from Maven)
        jvm.resolve(jvm.delta_jars())
        from verifier.harness.spark_envs import ensure
        from verifier.orchestration.orchestrator import spark_env
        from verifier.orchestration.pipeline_plan import check_user_pipelines

        for version in _spark_versions(request.spark_version):  # installed once, or an error
            ensure(version)
        check_user_pipelines(list(opts.pipelines), env={**os.environ, **spark_env()})
    for name in opts.clients or (client,):
        require_built(name)
    if request.app and java_presets(request.app):
        require_java_apps()
    if request.bootstrap_servers:
        _check_reachable(request.bootstrap_servers,
                        client_config.get("security_protocol", "PLAINTEXT"))
    if request.environment == "docker":
        from verifier.harness.containers.engine import require_engine

        require_engine()  # one line (exit 2) when no engine answers


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


def _partition_capable() -> str | None:
    """Why this run cannot do network partitions, or None if it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables, per-broker users)"
    missing = [t for t in ("ip", "nft", "setpriv") if shutil.which(t) is None]
    return f"needs {', '.join(missing)}" if missing else None


def _needs_namespace(request: ChaosRequest, scenarios: list[Scenario], in_netns: bool) -> bool:
    """Network partitions on the embedded cluster: the run must be re-executed in a
    namespace of its own when the machine allows it; else they are skipped (said here)."""
    wants_partition = any(f.get("kind") == "network-partition"
                          for s in scenarios for f in s.faults)
    if not wants_partition or request.bootstrap_servers or in_netns or \
            request.environment == "docker":
        return False
    why_not = _partition_capable()
    if why_not is None:
        return True
    print(f"network-partition faults are skipped: {why_not}")
    return False
