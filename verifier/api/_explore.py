"""`verifier explore` (docs/explore.md): the request its flags make, checked, and the
exploration run inside the frame of any command that runs scenarios."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from verifier.api._prepare import Prepared
from verifier.api._request import DEFAULT_BASE_PORT, DEFAULT_STATE, ChaosRequest
from verifier.api._run import spark_beside, stop_spark
from verifier.orchestration.explore.ledger import Ledger
from verifier.orchestration.explore.session import ExploreJob, explore
from verifier.orchestration.explore.space import parse_requests, plan
from verifier.orchestration.explore.trials import app_run
from verifier.orchestration.scenario import parse_duration
from verifier.rundata.errors import UsageError

LOCAL_ONLY = ("verifier explore runs on the local cluster only: it holds, copies and drops "
              "the transaction protocol's requests and answers them with errors for as long "
              "as its budget, which no shared cluster should see; nothing was started "
              "(leave out --bootstrap-servers)")


def plan_explore(out: Path, *, kafka_version: str | None = None, client: str = "kafka-python",
                 settings: list[str] = (), budget: str | float = "30m",
                 shrink_budget: str | float = "10m", pairs: int = 12,
                 requests: str | None = None, seed: int = 1, first: bool = False,
                 base_port: int = DEFAULT_BASE_PORT, state_dir: Path = DEFAULT_STATE,
                 bootstrap_servers: str | None = None) -> tuple[ExploreJob, ChaosRequest]:
    """The exploration and the chaos request whose checks and environment it runs on,
    checked before anything starts: every reason it cannot is a :class:`UsageError`
    (an external cluster, a bad budget, setting or request type, a folder explored
    otherwise). ``requests``: the focus, a comma list of request types (``--requests``);
    ``first``: stop at the first finding, unshrunk (``--first``)."""
    from producers.clients import parse_client
    from verifier.rundata.jvm import kafka_version as default_version
    from verifier.rundata.jvm import parse_kafka_version

    if bootstrap_servers:
        raise UsageError(LOCAL_ONLY)
    version = (kafka_version or default_version()).strip()
    parse_kafka_version(version)
    client = parse_client(client).text
    broker: dict[str, str] = {}
    for item in settings:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--setting {item!r}: expected a broker setting KEY=VALUE "
                             "(e.g. transaction.partition.verification.enable=false)")
        broker[key.strip()] = value.strip()
    if pairs < 0:
        raise UsageError(f"--pairs {pairs}: a number of pairs, 0 or more")
    focus = None if requests is None else parse_requests(requests)
    trials = tuple(plan(client, pairs, focus))
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder")
    job = ExploreJob(out=out, kafka_version=version, client=client,
                     budget_s=parse_duration(budget), trials=trials, settings=broker,
                     shrink_budget_s=parse_duration(shrink_budget), requests=focus,
                     first=first)
    out.mkdir(parents=True, exist_ok=True)
    # resumable only as it was begun
    Ledger.open(out, version, client, job.setting_list, job.request_list)
    # the checks' scenario: the first trial without an application, else (a focus on
    # the app workload alone) the first with its application (--app)
    trial = next((t for t in job.trials if app_run(t, client) is None), job.trials[0])
    app = app_run(trial, client)
    request = ChaosRequest(scenarios=(str(job.scenario_file(trial)),), seed=seed,
                           client=client, kafka_version=version, out=out / "runs",
                           base_port=base_port, state_dir=state_dir,
                           **({"app": app[0], "app_instances": app[2]} if app else {}))

    def command(path: Path, app: tuple[str, int] | None = None) -> str:
        """The chaos command of a scenario file; ``app``: (preset, instances) beside it."""
        with_app = {"app": app[0], "app_instances": app[1]} if app else \
            {"app": None, "app_instances": None}
        return replace(request, scenarios=(str(path),), **with_app).command()

    return replace(job, command=command), request


def run_explore(job: ExploreJob, prepared: Prepared, say=print) -> int:
    """The exploration on the environment of ``prepared`` (its request checked by
    :func:`verifier.api.prepare`), the verification's Spark session beside it."""
    from verifier.rundata.layout import RunLayout

    job.build_apps()  # the app workload's Java application, before the Spark session
    spark = spark_beside("verifier-explore", prepared.opts.spark_master,
                         RunLayout(job.out).spark_log)
    try:
        return explore(job, prepared.env, prepared.opts, spark, say=say)
    finally:
        stop_spark(spark)
