"""Planning a scenario run before anything starts: the run's options, its producers,
its fault specs resolved against the environment, and every check of its input."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from verifier.harness.faults.spec import build_schedule, parse_spec
from verifier.orchestration.scenario import Scenario
from verifier.rundata.errors import VerifierError
from verifier.rundata.plan import PlannedProducer

#: one logical producer of the run, as the plan holds it
ProducerPlan = PlannedProducer


@dataclass
class RunOptions:
    out: Path
    seed: int = 0
    sink: str | None = None  # overrides the scenario's sink
    spark_master: str | None = None
    user_config: Path | None = None
    user_mode: str | None = None  # derived mode of the user's config
    #: the user's producer settings read from ``user_config`` (kafka-python names)
    user_settings: dict = field(default_factory=dict)
    profile: str = "custom"
    extra_env: dict = field(default_factory=dict)
    #: run `verifier selftest` on each scenario's run folder after its verdict
    selftest: bool = False


def plan_producers(scenario: Scenario, run_id: str, opts: RunOptions) -> list[ProducerPlan]:
    plans = [ProducerPlan(f"{m}-0", m, m, f"{run_id}.{m}", dict(scenario.clients))
             for m in scenario.workload.modes]
    if opts.user_config is not None:
        label = f"user:{opts.user_config.name}"
        plans.append(ProducerPlan("user-0", label, opts.user_mode or "at-least-once",
                                  f"{run_id}.user", dict(opts.user_settings),
                                  str(opts.user_config)))
    return plans


def _substitute(value, plans: list[ProducerPlan], run_id: str):
    """Fault targets name topics and transactional ids by mode: "@idempotent"."""
    if isinstance(value, dict):
        return {k: _substitute(v, plans, run_id) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("@"):
        mode = value[1:]
        for p in plans:
            if p.mode == mode:
                return p.topic
        raise VerifierError(f"fault target {value!r}: no producer of mode {mode!r} in this run")
    return value


def _resolve_faults(scenario: Scenario, plans, run_id: str, env, processes) -> tuple[list, list]:
    """Fault specs with @mode references replaced; skipped kinds reported, not run."""
    specs, skipped = [], []
    node_ids = list(env.spec.node_ids) if hasattr(env, "spec") else None
    for i, raw in enumerate(scenario.faults, 1):
        if raw.get("kind") in env.skipped_kinds():
            skipped.append(raw)
            continue
        entry = dict(raw)
        target = entry.get("target", {})
        if "coordinator" in target:  # the transactional id is "<run id>.<pid>"
            tid = target["coordinator"]["transactional_id"]
            plan = next((p for p in plans if "@" + p.mode == tid), None)
            if plan is not None:
                target = {"coordinator": {"transactional_id": f"{run_id}.{plan.pid}"}}
        entry["target"] = _substitute(target, plans, run_id)
        specs.append(parse_spec(entry, f"{scenario.source} fault {i}", node_ids,
                                set(processes)))
    return specs, skipped


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
    from producers.config import check_buildable

    run_id = f"{scenario.name}-check-s{opts.seed}"
    plans = plan_producers(scenario, run_id, opts)
    processes = {p.process_name for p in plans} | {"observer"}
    problems = []
    try:
        specs, _ = _resolve_faults(scenario, plans, run_id, _Checked(env), processes)
        build_schedule(specs, opts.seed, scenario.workload.duration_s)
    except VerifierError as exc:
        problems.append(str(exc))
    for p in plans:
        overrides = {**env.client_config, **p.overrides}
        try:
            check_buildable(p.expect, overrides, transactional_id=f"{run_id}.{p.pid}")
        except VerifierError as exc:
            label = "your producer config" if p.config_file else f"mode {p.mode}"
            problems.append(f"{label}: {exc}")
    return problems
