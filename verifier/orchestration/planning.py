"""Planning a scenario run before anything starts: the run's options, its producers,
its fault specs resolved against the environment, and every check of its input."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from verifier.harness.faults.spec import build_schedule, parse_spec
from verifier.orchestration.scenario import Scenario
from verifier.rundata.errors import VerifierError
from verifier.rundata.naming import own_ids
from verifier.rundata.plan import PlannedProducer
from verifier.rundata.vocab import COPIER

#: fault kinds that act on the applications under test (--app): a scenario with one
#: needs them (verifier.harness.faults.kinds: the application and group families)
APP_FAULTS = ("instance-kill", "instance-pause", "group-coordinator-kill", "scale-out",
              "scale-in")

#: one logical producer of the run, as the plan holds it
ProducerPlan = PlannedProducer


@dataclass
class RunOptions:
    out: Path
    seed: int = 0
    sink: str | None = None  # overrides the scenario's sink
    spark_master: str | None = None
    #: a Spark cluster the run starts for the pipelines (``standalone``), or None
    spark_cluster: str | None = None
    user_config: Path | None = None
    user_mode: str | None = None  # derived mode of the user's config
    #: the user's producer settings read from ``user_config`` (kafka-python names)
    user_settings: dict = field(default_factory=dict)
    #: what the user's column runs, if not ``user_settings`` (``java``: the file verbatim,
    #: Java names; producers.properties.read_user_config)
    user_overrides: dict | None = None
    #: the user's keys replaced or not applied, one line each (config.json notes)
    user_notes: list[str] = field(default_factory=list)
    profile: str = "custom"
    extra_env: dict = field(default_factory=dict)
    #: the generator client of every column (producers.clients.CLIENTS)
    client: str = "kafka-python"
    #: several clients side by side: one column per mode and client (``idempotent/java``)
    clients: tuple[str, ...] = ()
    #: run `verifier selftest` on each scenario's run folder after its verdict
    selftest: bool = False
    #: broker versions run one after another, each on a fresh local cluster (the
    #: versions profile); empty: one run on the environment's version
    kafka_versions: tuple[str, ...] = ()
    #: stop the load at the first forbidden anomaly the live checks report, heal,
    #: drain and judge; a matrix stops after that scenario (``--fail-fast``)
    fail_fast: bool = False
    #: the pipelines under test (verifier.orchestration.pipeline_plan.PlannedPipeline)
    pipelines: tuple = ()
    #: the consumer applications under test (verifier.rundata.apps.PlannedApp)
    apps: tuple = ()
    #: runs per scenario (``chaos --repeat N``), each with its own seed (chaos.repeat_seeds)
    repeat: int = 1
    #: (k, N): this run is run k of N of its scenario; its folder and run id say so
    repetition: tuple[int, int] | None = None
    #: the user's transactional and group ids as they are, without the run's prefix
    #: (``--use-my-ids``; verifier.rundata.naming)
    use_my_ids: bool = False


def plan_producers(scenario: Scenario, run_id: str, opts: RunOptions) -> list[ProducerPlan]:
    from producers.clients import check_client, client_slug, client_version, column_suffix

    clients = opts.clients or (opts.client,)
    plans = []
    for c in clients:
        # the plan names the client and its version apart (java, 3.9.1); the column,
        # topic and producer id carry the version only where the name alone is ambiguous
        version = {"client": check_client(c), "client_version": client_version(c)}
        col = column_suffix(c, clients)
        slug = client_slug(col)
        for m in scenario.workload.modes:
            if m == COPIER and version["client"] != "kafka-python":
                continue  # the copier is kafka-python's only (producers.copier)
            # the copier: a transactional producer (its expectations) reading the topic of
            # this client's mode listed before it
            expect, source = (("transactional", plans[-1].topic) if m == COPIER
                              else (m, None))
            if len(clients) > 1:  # side by side: the column names the client
                plans.append(ProducerPlan(f"{m}-{slug}-0", f"{m}/{col}", expect,
                                          f"{run_id}.{m}.{slug}", dict(scenario.clients),
                                          client_spec=c, input_topic=source, **version))
            else:
                plans.append(ProducerPlan(f"{m}-0", m, expect, f"{run_id}.{m}",
                                          dict(scenario.clients), client_spec=c,
                                          input_topic=source, **version))
    client = {"client": check_client(clients[0]), "client_version": client_version(clients[0]),
              "client_spec": clients[0]}
    if opts.user_config is not None:
        label = f"user:{opts.user_config.name}"
        plans.append(ProducerPlan("user-0", label, opts.user_mode or "at-least-once",
                                  f"{run_id}.user",
                                  own_ids(opts.user_settings if opts.user_overrides is None
                                          else opts.user_overrides, run_id, opts.use_my_ids),
                                  str(opts.user_config), **client))
    return plans


def transactional_ids(plans: list[ProducerPlan], run_id: str) -> dict[str, str]:
    """The run's transactional ids, each with its producer (transactional id -> pid): a
    transactional producer's own setting, else the generators' default ``<run id>.<pid>``
    (producers/cli.py)."""
    return {str(p.overrides.get("transactional_id") or f"{run_id}.{p.pid}"): p.pid
            for p in plans if p.expect == "transactional"}


def _named(ref: str, plan: ProducerPlan) -> bool:
    """Whether ``"@<mode>"`` names this producer: its mode (without the client a column
    side by side adds) or its preset; the copier only as ``@copier``, although its
    expectations are the transactional preset's."""
    base = plan.mode.split("/")[0]
    return ref == "@" + base or (base != COPIER and ref == "@" + plan.expect)


def _substitute(value, plans: list[ProducerPlan], run_id: str):
    """Fault targets name topics and transactional ids by mode: "@idempotent"."""
    if isinstance(value, dict):
        return {k: _substitute(v, plans, run_id) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("@"):
        mode = value[1:]
        for p in plans:  # with several clients: the first client's column of that mode
            if _named(value, p):
                return p.topic
        raise VerifierError(f"fault target {value!r}: no producer of mode {mode!r} in this run")
    return value


def _resolve_faults(scenario: Scenario, plans, run_id: str, env, processes) -> tuple[list, list]:
    """Fault specs with @mode references replaced; skipped kinds reported, not run."""
    specs, skipped = [], []
    node_ids = list(env.spec.node_ids) if hasattr(env, "spec") else None
    for i, raw in enumerate((*scenario.faults, *scenario.broker_faults()), 1):
        if raw.get("kind") in env.skipped_kinds():
            skipped.append(raw)
            continue
        entry = dict(raw)
        target = entry.get("target", {})
        if "coordinator" in target:  # the transactional id is "<run id>.<pid>"
            tid = target["coordinator"]["transactional_id"]
            plan = next((p for p in plans if _named(tid, p)), None)
            if plan is not None:
                target = {"coordinator": {"transactional_id": f"{run_id}.{plan.pid}"}}
        entry["target"] = _substitute(target, plans, run_id)
        for one in _per_client(entry, set(processes), plans, run_id):
            specs.append(parse_spec(one, f"{scenario.source} fault {i}", node_ids,
                                    set(processes)))
    return specs, skipped


def _app_transactional_id(ref: str, run_id: str, processes) -> str:
    """``"@app:<name>/<instance>"``: that instance's transactional id (the presets':
    verifier.rundata.apps.transactional_id_prefix and the instance), the application
    being one of the run's (``--app``)."""
    from verifier.rundata.apps import PROCESS_PREFIX, transactional_id_prefix

    name, slash, instance = ref.removeprefix("@app:").rpartition("/")
    if not slash or not name or not instance.isdigit():
        raise VerifierError(f"transactional id {ref!r}: an application's is "
                            "\"@app:<name>/<instance>\", e.g. \"@app:copier-transactional/0\"")
    if processes is not None and f"{PROCESS_PREFIX}/{name}/{instance}" not in processes:
        raise VerifierError(f"transactional id {ref!r}: no instance {instance} of an "
                            f"application {name!r} in this run (--app)")
    return transactional_id_prefix(run_id, name) + instance


def _transactional_ids(entry: dict, plans, run_id: str, processes=None) -> list[dict] | None:
    """A hold or error answer whose ``transactional_id`` (or its ``release_on``'s) names
    a mode (``"@transactional"``): one fault per generator of that mode, every client's,
    with its real transactional id ``<run id>.<pid>``; or an application's instance
    (``"@app:<name>/<instance>"``): one fault. None if the entry names neither."""
    params = entry.get("params")
    kind = entry.get("kind")
    if kind not in ("hold", "error-answer") or not isinstance(params, dict):
        return None
    release = params.get("release_on") if isinstance(params.get("release_on"), dict) else {}
    if kind == "error-answer" and str(params.get("client_id") or "").startswith("@"):
        return _client_ids(entry, plans)
    refs = {v for v in (params.get("transactional_id"), release.get("transactional_id"))
            if isinstance(v, str) and v.startswith("@")}
    if not refs:
        return None
    if len(refs) > 1:
        raise VerifierError(f"{kind}: transactional ids {sorted(refs)}: one mode per fault")
    (ref,) = refs
    if ref.startswith("@app:"):
        tid = _app_transactional_id(ref, run_id, processes)
        new = dict(params)
        if new.get("transactional_id") == ref:
            new["transactional_id"] = tid
        if release.get("transactional_id") == ref:
            new["release_on"] = {**release, "transactional_id": tid}
        return [{**entry, "params": new}]
    matches = [p for p in plans if _named(ref, p)]
    if not matches:
        raise VerifierError(f"{kind}: no producer of mode {ref[1:]!r} in this run")
    out = []
    for p in matches:
        tid = f"{run_id}.{p.pid}"
        new = dict(params)
        if new.get("transactional_id") == ref:
            new["transactional_id"] = tid
        if release.get("transactional_id") == ref:
            new["release_on"] = {**release, "transactional_id": tid}
        out.append({**entry, "params": new})
    return out


def _client_ids(entry: dict, plans) -> list[dict]:
    """An error answer whose ``client_id`` names a mode (``"@at-least-once"``): one
    fault per generator of that mode, every client's, on its client id."""
    ref = entry["params"]["client_id"]
    matches = [p for p in plans if _named(ref, p)]
    if not matches:
        raise VerifierError(f"error-answer: no producer of mode {ref[1:]!r} in this run")
    return [{**entry, "params": {**entry["params"], "client_id": str(
        p.overrides.get("client_id") or f"verifier.generator.{p.pid}")}} for p in matches]


def _per_client(entry: dict, processes: set[str], plans=(), run_id: str = "") -> list[dict]:
    """A process fault naming a mode's generator (``producer:transactional``) hits that
    mode's generator of every client when several run side by side
    (``producer:transactional/java``, ``producer:transactional/kafka-python``); so does a
    hold or error answer naming a mode's transactional id (``"@transactional"``)."""
    held = _transactional_ids(entry, plans, run_id, processes)
    if held is not None:
        return held
    name = (entry.get("target") or {}).get("process")
    if not isinstance(name, str) or name in processes:
        return [entry]
    matches = sorted(p for p in processes if p.startswith(name + "/"))
    return [{**entry, "target": {**entry["target"], "process": m}} for m in matches] or [entry]


class _Checked:
    """What :func:`_resolve_faults` needs of an environment, for a check before start."""

    def __init__(self, env) -> None:
        self._skipped = env.skipped_kinds()
        if hasattr(env, "spec"):
            self.spec = env.spec

    def skipped_kinds(self) -> set[str]:
        return self._skipped


def validate_scenario(scenario: Scenario, opts: RunOptions, env) -> list[str]:
    """Every check a run would make of its input, before anything starts: the fault
    specs against this environment, the schedule against the load's length, and each
    producer configuration built client-side. Returns the problems (empty if none)."""
    from producers.config import check_buildable, resolve

    run_id = f"{scenario.name}-check-s{opts.seed}"
    plans = plan_producers(scenario, run_id, opts)
    processes = {p.process_name for p in plans} | {"observer"}
    from verifier.orchestration.pipeline_plan import for_scenario

    processes |= {p.process_name for p in for_scenario(opts.pipelines, scenario)}
    processes |= {a.process_name(i) for a in opts.apps for i in range(a.instances)}
    problems = []
    from verifier.orchestration.pipeline_plan import kills_pipelines
    from verifier.orchestration.spark_cluster import problems as cluster_problems

    problems += cluster_problems(scenario, opts)
    if kills_pipelines(scenario.faults) and not opts.pipelines:
        problems.append(f"scenario {scenario.name} kills the pipelines under test: name "
                        "them with --pipeline (e.g. --pipeline kafka-sink,delta)")
    if any(f.get("kind") in APP_FAULTS for f in scenario.faults) and not opts.apps:
        problems.append(f"scenario {scenario.name} acts on the applications under test: name "
                        "them with --app (e.g. --app copier-commit-before)")
    try:
        specs, _ = _resolve_faults(scenario, plans, run_id, _Checked(env), processes)
        build_schedule(specs, opts.seed, scenario.workload.duration_s)
    except VerifierError as exc:
        problems.append(str(exc))
    for p in plans:
        # a Java column runs the user's file verbatim; its checks read the mapped settings
        own = opts.user_settings if p.config_file and p.client == "java" else p.overrides
        overrides = {**env.client_config, **own}
        try:
            if p.client != "kafka-python":  # the mode conflicts; the client checks its own
                resolve(p.expect, overrides, transactional_id=f"{run_id}.{p.pid}")
                continue
            check_buildable(p.expect, overrides, transactional_id=f"{run_id}.{p.pid}")
        except VerifierError as exc:
            label = "your producer config" if p.config_file else f"mode {p.mode}"
            problems.append(f"{label}: {exc}")
    return problems
