"""Shrinking a FAILed run (docs/shrink.md): its candidates run as the original ran, on the
environment, client(s), versions, pipelines, producer config and seed its plan records."""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path

from verifier.api._prepare import Prepared
from verifier.api._request import DEFAULT_BASE_PORT, DEFAULT_STATE, ChaosRequest
from verifier.api._run import spark_beside, stop_spark
from verifier.orchestration.scenario import parse_duration
from verifier.orchestration.shrink_plan import FailedRun, load_failed_run, scenario_toml
from verifier.orchestration.shrink_result import Result
from verifier.rundata.apps import DEFAULT_INSTANCES
from verifier.rundata.errors import UsageError
from verifier.rundata.plan import RunPlan


def request_from_plan(plan: RunPlan, scenario_file: Path | str, **where) -> ChaosRequest:
    """The chaos request that runs ``scenario_file`` as the run of ``plan`` ran: seed,
    client(s), producer config, pipelines and their guarantee, applications (their
    instances and group protocols), broker version,
    environment and Spark master. The file holds the scenario as it ran (the profile's
    scaling already applied, the sink in its options), so no profile. ``where``: the
    request's ``out``, ``base_port`` and ``state_dir``."""
    fields: dict = {"scenarios": (str(scenario_file),), "seed": plan.seed, **where}
    producers = list(plan.producers.values())
    clients = list(dict.fromkeys(p.client for p in producers if not p.config_file))
    if len(clients) > 1:
        fields["clients"] = ",".join(clients)
    elif clients:
        fields["client"] = clients[0]
    user = [p for p in producers if p.config_file]
    if user:
        path = Path(user[0].config_file)
        if not path.exists():
            raise UsageError(f"the run's producer config {path} is gone: it is needed to "
                             "run its column again")
        fields["producer_config"] = path
        if not clients:
            fields["client"] = user[0].client
    pipelines = plan.pipelines
    if pipelines:
        fields["pipeline"] = ",".join(p["spec"] for p in pipelines.values())
        guarantees = {p.get("guarantee") for p in pipelines.values()}
        if len(guarantees) == 1 and None not in guarantees:
            fields["pipeline_guarantee"] = guarantees.pop()
    fields.update(_app_fields(plan.apps))
    if plan.environment == "external":
        fields["bootstrap_servers"] = plan.bootstrap_servers
    elif plan.environment == "docker":
        fields["environment"] = "docker"
    elif plan.kafka_version not in (None, "unknown"):
        fields["kafka_version"] = str(plan.kafka_version)
    if plan.spark_master:
        fields["spark_master"] = str(plan.spark_master)
    return ChaosRequest(**fields)


def _app_fields(apps: dict[str, dict]) -> dict:
    """``--app``, ``--app-guarantee``, ``--app-oracle``, ``--app-instances`` and
    ``--group-protocol`` as the run's config.json ``apps`` records them: the presets by
    the names they were typed as (``streams-eos``; a ``[consumer]`` protocol suffix
    dropped, the protocols given again), or the user's command with its claim and its
    oracle (when not the default)."""
    if not apps:
        return {}
    fields: dict = {}
    if all(e.get("preset") for e in apps.values()):
        fields["app"] = ",".join(dict.fromkeys(n.split("[", 1)[0] for n in apps))
    else:
        entry = next(iter(apps.values()))
        fields["app"] = shlex.join(entry["command"])
        fields["app_guarantee"] = entry["guarantee"]
        if (entry.get("oracle") or "identity") != "identity":
            fields["app_oracle"] = entry["oracle"]
    instances = {int(e.get("instances") or DEFAULT_INSTANCES) for e in apps.values()}
    if instances != {DEFAULT_INSTANCES}:
        fields["app_instances"] = max(instances)
    protocols = [e["group_protocol"] for e in apps.values() if e.get("group_protocol")]
    if protocols:
        fields["group_protocol"] = ",".join(dict.fromkeys(protocols))
    return fields


@dataclass(frozen=True)
class ShrinkJob:
    """A checked `verifier shrink`: the FAILed run, where its outputs go, its budget,
    and the chaos request that runs its original scenario again."""

    failed: FailedRun
    out: Path
    budget_s: float
    request: ChaosRequest
    calibrate: int = 3
    confirm: int = 3


def plan_shrink(run_dir: Path, *, column: str | None = None, kind: str | None = None,
                budget: str | float = "30m", calibrate: int = 3, confirm: int = 3,
                out: Path | None = None, base_port: int = DEFAULT_BASE_PORT,
                state_dir: Path = DEFAULT_STATE) -> ShrinkJob:
    """What shrinking ``run_dir`` takes, checked: every reason it cannot be shrunk is a
    :class:`UsageError`. Writes OUT/original.toml (OUT: default RUN_DIR/shrink), the
    scenario every candidate starts from."""
    budget_s = parse_duration(budget)
    failed = load_failed_run(run_dir, column, kind)
    out = out or run_dir / "shrink"
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    original = out / "original.toml"
    original.write_text(scenario_toml(failed.spec, [f"the scenario of {failed.run_dir}"]))
    request = request_from_plan(failed.plan, original, base_port=base_port,
                                state_dir=state_dir, out=out / "runs")
    return ShrinkJob(failed, out, budget_s, request, calibrate, confirm)


@dataclass(frozen=True)
class Shrunk:
    """What a shrink found: the search's result, its output files (``scenario``,
    ``report``, ``json``) and its wall time."""

    result: Result
    paths: dict[str, Path]
    seconds: float

    @property
    def reproduced(self) -> bool:
        """Did the original FAIL reproduce often enough to shrink (else exit 2)?"""
        return self.result.stopped not in ("too-rare", "not-reproduced")


def shrink(job: ShrinkJob, prepared: Prepared, say=print) -> Shrunk:
    """Shrink ``job``'s FAIL on the environment of ``prepared`` (its request checked by
    :func:`verifier.api.prepare`): calibration, candidates, confirmation within the budget,
    each run's own output in OUT/runs.log, progress lines to ``say``. Writes OUT/shrunk.toml,
    shrink.md and shrink.json."""
    from verifier.orchestration.shrink import Shrinker
    from verifier.orchestration.shrink_runner import ChaosRunner, write_outputs
    from verifier.orchestration.shrink_specs import describe
    from verifier.rundata.layout import RunLayout

    failed, out, env, opts = job.failed, job.out, prepared.env, prepared.opts
    say(f"shrink {failed.run_dir}: {failed.fingerprint} | {describe(failed.spec)} | "
        f"budget {job.budget_s / 60:.0f} min | output {out}")
    spark = spark_beside("verifier-shrink", opts.spark_master, RunLayout(out).spark_log)
    t0 = time.monotonic()
    with (out / "runs.log").open("a") as log:
        try:
            with env:
                runner = ChaosRunner(env, opts, spark, out, failed.spec["name"],
                                     failed.fingerprint.column, log)
                result = Shrinker(failed.spec, failed.fingerprint, runner,
                                  budget_s=job.budget_s, est_run_s=failed.seconds,
                                  calibrate=job.calibrate, confirm=job.confirm,
                                  column_modes=failed.column_modes, say=say).shrink()
        finally:
            stop_spark(spark)
    shrunk = out / "shrunk.toml"
    command = replace(job.request, scenarios=(str(shrunk),)).command()
    return Shrunk(result, write_outputs(result, failed, out, command), time.monotonic() - t0)
