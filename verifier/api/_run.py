"""Running checked scenarios: the chaos matrix of a :class:`~verifier.api.Prepared`
request (or one run per broker version, or the known-bugs grid), and one scenario on an
environment already up (the pytest plugin's, shrink's candidates)."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import Future
from pathlib import Path

from verifier.api._prepare import Prepared
from verifier.orchestration.planning import RunOptions, validate_scenario
from verifier.orchestration.scenario import Scenario
from verifier.rundata.errors import UsageError


def spark_beside(app_name: str, master: str | None, log_file: Path) -> Future:
    """The verification's Spark session, started in a daemon thread while the cluster and
    the first observer start (its first use is the first run's verify; a signal meanwhile
    never waits for it). The JVM's start-up lines and log4j output go to ``log_file``."""
    from streaming.session import spark_session

    spark: Future = Future()

    def start_spark() -> None:
        try:
            spark.set_result(spark_session(app_name=app_name, master=master,
                                           log_file=log_file))
        except BaseException as exc:  # noqa: BLE001 - raised where the session is used
            spark.set_exception(exc)

    threading.Thread(target=start_spark, name="verifier-spark", daemon=True).start()
    return spark


def stop_spark(spark: Future) -> None:
    """Stop a session of :func:`spark_beside` that started (when stopped by a signal its
    JVM dies with the tool)."""
    from verifier.harness.procs import STOPPING

    if not STOPPING.is_set() and spark.done() and spark.exception() is None:
        spark.result().stop()


def run_chaos(prepared: Prepared, *, collect: list | None = None, advice=None) -> int:
    """Run every scenario of ``prepared`` on its environment, side by side, and write the
    matrix outputs (verdict.json, junit.xml, report.html) into its output folder; with
    several broker versions a fresh local cluster each, with the known-bugs profile each
    bug's combinations. Returns the exit code of the worst verdict (DESIGN §7).
    ``collect``: a list every run's finished document is appended to; ``advice``: each
    column's advice (verifier.cli.advise.ColumnAdvice), compared in every document."""
    from verifier.orchestration.chaos import run_matrix
    from verifier.rundata.layout import RunLayout

    request, opts, env = prepared.request, prepared.opts, prepared.env
    seeds = (f"seeds {request.seed}..{request.seed + request.repeat - 1}, {request.repeat} "
             f"runs each" if request.repeat > 1 else f"seed {request.seed}")
    print(f"profile {prepared.profile.name}: "
          f"{', '.join(s.name for s in prepared.scenarios)} ({seeds}, output {request.out})",
          flush=True)
    spark = spark_beside("verifier-chaos", request.spark_master,
                         RunLayout(request.out).spark_log)
    try:
        if prepared.known_bug_plans or opts.kafka_versions:
            from verifier.harness.environment import LocalEnvironment

            def make_env(version: str):  # a fresh local cluster of each version in turn
                return LocalEnvironment(env.state_dir, base_port=request.base_port,
                                        partitions=env.partitions, kafka_version=version)

            if prepared.known_bug_plans:
                from verifier.orchestration.known_bugs import run_known_bugs

                return run_known_bugs(make_env, list(prepared.known_bug_plans), opts, spark)
            from verifier.orchestration.chaos import run_versions

            return run_versions(make_env, list(opts.kafka_versions), prepared.scenarios,
                                opts, spark, collect=collect, advice=advice)
        return run_matrix(env, prepared.scenarios, opts, spark, collect=collect, advice=advice)
    finally:
        stop_spark(spark)


def run_scenario(env, scenario: Scenario, opts: RunOptions, spark, out=sys.stdout) -> dict:
    """One run of ``scenario`` on ``env`` (started: inside its ``with``), its folder under
    ``opts.out``, its progress and tables written to ``out``. A scenario the planner
    refuses on this environment is a :class:`UsageError` before anything starts. Returns
    the run's verdict document (also in its folder's verdict.json)."""
    from verifier.orchestration.chaos import run_one

    problems = validate_scenario(scenario, opts, env)
    if problems:
        raise UsageError("; ".join(problems))
    return run_one(env, scenario, opts, spark, out=out)
