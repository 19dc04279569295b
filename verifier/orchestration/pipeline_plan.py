"""The pipelines a chaos run plans (``verifier chaos --pipeline``, issue 21), before any
process starts: each ``--pipeline`` loaded and checked (a user's file built once on a
Spark session: one that drops the value is refused here), run once per
``fail_on_data_loss`` value and ``--spark-version``, and its entry in config.json (the
topics it reads, its output topic, the batch hold a driver kill needs).
:mod:`verifier.orchestration.pipelines` runs them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from verifier.rundata.errors import UsageError, VerifierError

#: every pipeline's process is "pipeline/<name>": a fault naming "pipeline" hits them all
PROCESS_PREFIX = "pipeline"
#: a scenario that kills a pipeline's driver holds each batch open this long once part of
#: it is written, so a kill lands mid-batch (streaming.pipelines.hold, every pipeline)
HOLD_MS = 2000

@dataclass(frozen=True)
class PlannedPipeline:
    name: str
    spec: str
    guarantee: str
    isolation: str = "read_committed"
    #: the Kafka source's failOnDataLoss (Spark's default true; a scenario's
    #: ``[pipelines] fail_on_data_loss`` runs a pipeline once per value given)
    fail_on_data_loss: bool = True
    #: the PySpark it runs on (``--spark-version``; None: the project's own), in an
    #: environment of its own (verifier.harness.spark_envs)
    spark_version: str | None = None
    #: the pipeline file's INPUT and oracle names (verifier.rundata.pipeline_file's
    #: FileContract.to_json); empty: the tool's records, judged by identity
    file: dict = field(default_factory=dict)

    @property
    def inputs(self) -> dict[str, int]:
        return dict(self.file.get("inputs") or {})

    @property
    def process_name(self) -> str:
        return f"{PROCESS_PREFIX}/{self.name}"


def for_scenario(pipelines, scenario) -> list[PlannedPipeline]:
    """The pipelines as ``scenario`` runs them: once per ``fail_on_data_loss`` value of
    its ``[pipelines]`` table, side by side (``delta@failOnDataLoss=false``); as given
    when it names none."""
    from dataclasses import replace

    values = tuple((getattr(scenario, "pipelines", None) or {}).get("fail_on_data_loss", ()))
    if not values:
        return list(pipelines)
    return [replace(p, name=f"{p.name}@failOnDataLoss={str(v).lower()}", fail_on_data_loss=v)
            for p in pipelines for v in values]


def plan_pipelines(specs: tuple[str, ...], guarantee: str | None,
                   spark_versions=()) -> list[PlannedPipeline]:
    """Load and check every ``--pipeline`` (usage errors before anything starts); with
    ``spark_versions`` each runs once per version, side by side (``delta@spark-3.5.7``)."""
    from streaming.pipelines.loader import load_pipeline
    from verifier.orchestration.user_input import check_shared

    out: list[PlannedPipeline] = []
    loaded = []
    for spec in specs:
        p = load_pipeline(spec, guarantee)
        loaded.append(p)
        if p.guarantee is None:
            raise UsageError(f"pipeline {spec} claims no guarantee: set GUARANTEE = "
                             "\"exactly-once\" or \"at-least-once\" in it, or give "
                             "--pipeline-guarantee")
        if any(o.name == p.name for o in out):
            raise UsageError(f"two pipelines named {p.name!r}: rename one file")
        out.append(PlannedPipeline(p.name, spec, p.guarantee, file=p.file.to_json()))
    check_shared(loaded)
    if not spark_versions:
        return out
    from dataclasses import replace

    return [replace(p, name=f"{p.name}@spark-{v}", spark_version=v)
            for p in out for v in spark_versions]


#: the check of a user's pipeline before the run: a Spark JVM starts, on a loaded machine
CHECK_TIMEOUT = 180.0


def check_user_pipelines(pipelines: list[PlannedPipeline], env: dict | None = None,
                         say=print) -> None:
    """Build every pipeline that is not a preset on a source frame, before anything
    starts (no cluster yet): one that drops the value, or whose ``build`` fails, is a
    usage error now rather than after the cluster and the observer are up. The presets
    keep the value (tests/integration/pipelines run each)."""
    import subprocess

    from streaming.pipelines.presets import PRESETS
    from verifier.harness.procs import spawn

    for p in pipelines:
        if p.spec in PRESETS:
            continue
        say(f"checking pipeline {p.name} ({p.spec}): its build() on a Spark session ...")
        # in the PySpark it runs on (--spark-version): a real-time trigger needs 4.1+
        python, own_env = python_for(p.spark_version, env)
        argv = [python, "-m", "streaming.pipelines.driver", "--check",
                _absolute(p.spec), "--pipeline-guarantee", p.guarantee]
        proc = spawn(f"pipeline-check/{p.name}", argv, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, env=own_env)
        try:
            out, err = proc.communicate(timeout=CHECK_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise VerifierError(f"pipeline {p.name}: its check did not finish in "
                                f"{CHECK_TIMEOUT:.0f} s") from None
        except BaseException:
            proc.kill()  # Ctrl-C: the check's JVM goes with it
            raise
        if proc.returncode == 0:
            continue
        refused = [ln[len("refused: "):] for ln in err.splitlines()
                   if ln.startswith("refused: ")]
        if refused:
            raise UsageError(refused[-1])
        tail = "\n".join(err.strip().splitlines()[-5:])
        raise VerifierError(f"pipeline {p.name}: its check failed (exit "
                            f"{proc.returncode}): {tail}")


def python_for(spark_version: str | None, env: dict | None) -> tuple[str, dict | None]:
    """The Python (and environment) a pipeline's driver runs with: the project's, or
    that of its ``--spark-version`` (verifier.harness.spark_envs)."""
    if spark_version is None:
        return sys.executable, env
    from verifier.harness.spark_envs import env_for

    own = env_for(spark_version)
    return str(own.python), {**(env if env is not None else os.environ), **own.child_env()}


def kills_pipelines(faults) -> bool:
    """Does the scenario's schedule (or fault list) act on a pipeline's driver?"""
    def target(f):
        t = f.get("target") if isinstance(f, dict) else f.target
        return (t or {}).get("process", "")
    return any(str(target(f)).startswith(PROCESS_PREFIX) for f in faults)


def plan_entries(pipelines: list[PlannedPipeline], run_id: str, hold: bool,
                 run_topics: list[str] = ()) -> dict:
    """config.json ``pipelines`` (verifier.rundata.pipelines): with ``topics``, the
    cluster topics each reads: its declared ``INPUT`` (``input_topics``: each name ->
    ``<run>.in.<name>``), else ``run_topics`` (the run's own, no declared one)."""
    from verifier.rundata.pipeline_file import input_topic

    def reads(p) -> dict:
        if not p.inputs:
            return {"topics": list(run_topics)}
        mapped = {t: input_topic(run_id, t) for t in p.inputs}
        return {"topics": list(mapped.values()), "input_topics": mapped}
    return {p.name: {"spec": _absolute(p.spec), "guarantee": p.guarantee,
                     "isolation": p.isolation, "output_topic": output_topic(run_id, p.name),
                     "hold_ms": HOLD_MS if hold else 0,
                     "fail_on_data_loss": p.fail_on_data_loss,
                     **({"spark_version": p.spark_version} if p.spark_version else {}),
                     **{k: v for k, v in p.file.items() if k != "inputs"}, **reads(p),
                     # an aggregation writes after its shuffle: hold where the sink writes
                     **({"hold_where": "written"}
                        if hold and p.file.get("oracle") == "reference" else {})}
            for p in pipelines}


def _topic(name: str) -> str:
    """A pipeline's name as a topic name's part (Kafka allows [a-zA-Z0-9._-])."""
    return name.replace("@", ".").replace("=", "-")


def output_topic(run_id: str, name: str) -> str:
    return f"{run_id}.out.{_topic(name)}"


def _absolute(spec: str) -> str:
    """A file spec made absolute: the driver may run from another folder."""
    target, colon, func = spec.partition(":")
    if target.endswith(".py"):
        return str(Path(target).expanduser().resolve()) + colon + func
    return spec


__all__ = ["CHECK_TIMEOUT", "HOLD_MS", "PROCESS_PREFIX", "PlannedPipeline",
           "check_user_pipelines", "for_scenario", "kills_pipelines", "output_topic",
           "plan_entries", "plan_pipelines", "python_for"]
