"""The pipelines under test in a chaos run (``verifier chaos --pipeline``, issue 21).

Each pipeline is its own driver process (streaming.pipelines.driver), named
``pipeline/<name>`` so the nemesis can kill it (a fault's ``{"process": "pipeline"}``
reaches every pipeline of the run), with its own checkpoint. Its phases ride on the
run's: started with the observer at set-up (a pipeline that drops the value is refused
there, before any load), killed and restarted by the faults, drained after the observer
(its committed position reaches the end offsets the drain saw), then stopped, when it
reads its output back into the run folder for the judge.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from verifier.harness.procs import ManagedProcess, child_pids
from verifier.rundata.checkpoint import (
    batch_in_flight,
    committed_end_offsets,
    offset_log_batches,
    planned_end_offsets,
)
from verifier.rundata.errors import ProcessError, UsageError, VerifierError
from verifier.rundata.formats import read_json
from verifier.rundata.layout import RunLayout
from verifier.rundata.pipelines import PipelineLayout
from verifier.rundata.waiting import GiveUp, wait_until

#: every pipeline's process is "pipeline/<name>": a fault naming "pipeline" hits them all
PROCESS_PREFIX = "pipeline"
#: a scenario that kills a pipeline's driver holds each batch open this long once part of
#: it is written, so a kill lands mid-batch (streaming.pipelines.hold, every pipeline)
HOLD_MS = 2000
READY_TIMEOUT = 240.0  # a Spark JVM per pipeline, next to the observer's, on 2 cores
#: the read-back after the stop: a Spark job over the output (and a Delta log replay);
#: a pipeline judged by the reference oracle also runs twice more without faults
STOP_TIMEOUT = 240.0
REFERENCE_STOP_TIMEOUT = 900.0


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
        python, own_env = _python_for(p.spark_version, env)
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


def _python_for(spark_version: str | None, env: dict | None) -> tuple[str, dict | None]:
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


class PipelineProcess(ManagedProcess):
    """A pipeline's driver; knows its checkpoint (the checkpoint-lost fault moves it)."""

    def __init__(self, run_dir: Path, name: str, config: Path, env: dict,
                 spark_version: str | None = None) -> None:
        self.where = PipelineLayout(run_dir, name)
        # its own PySpark (--spark-version) or the project's
        python, env = _python_for(spark_version, env)
        argv = [python, "-u", "-m", "streaming.pipelines.driver", "--plan",
                str(config), "--pipeline", name]
        super().__init__(f"{PROCESS_PREFIX}/{name}", argv,
                         RunLayout(run_dir).log(self.where.log_name), env=env)
        #: seconds waited for its exit after SIGTERM before the SIGKILL, if it came to that
        self.stop_timed_out: float | None = None

    @property
    def checkpoint(self) -> Path:
        return self.where.checkpoint

    def lost_checkpoint(self) -> Path:
        return self.where.next_lost_checkpoint()

    def before_kill(self, waited: float) -> None:
        """A driver that did not stop within ``waited`` s of its SIGTERM (a main thread
        stuck in a JVM call never runs the handler): its Python threads (SIGUSR1:
        streaming.session.driver_process) and its JVM's (SIGQUIT) into its log, then a line
        saying so; the note of :func:`stop` points there."""
        self.stop_timed_out = waited
        pid = self.pid
        if pid is None:
            return
        for target, sig in ((pid, signal.SIGUSR1),
                            *((c, signal.SIGQUIT) for c in child_pids(pid))):
            try:
                os.kill(target, sig)
            except OSError:
                pass
        time.sleep(2)  # the dumps are written by the processes themselves
        with open(self.log_path, "ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} no exit {waited:.0f} s after "
                      "SIGTERM: thread dumps above (Python, then the JVM's); SIGKILL\n"
                      .encode())

    def batch_in_flight(self) -> bool:
        """A batch planned in the checkpoint (offsets/N) and not committed (no commits/N):
        a driver killed now re-runs it after its restart."""
        return batch_in_flight(self.checkpoint)

    def batch_offsets(self, batch: int) -> int | None:
        """How many offsets batch ``batch`` planned to read (records, and transaction
        markers at read_committed), from its checkpoint's offsets log; None if unknown.
        Batch 0 reads from offset 0: the run's topics are created fresh."""
        try:
            end = planned_end_offsets(self.checkpoint, batch)
            begin = planned_end_offsets(self.checkpoint, batch - 1) if batch > 0 else {}
        except (OSError, ValueError, VerifierError):
            return None
        return sum(max(0, o - begin.get(tp, 0)) for tp, o in end.items())

    @property
    def mid_batch_marker(self) -> Path:
        """Present while a batch holds after part of it is written (streaming.pipelines.hold;
        the ``mid-batch`` trigger waits for it: verifier.harness.faults.triggers)."""
        return self.where.holding


def wait_ready(procs: list[PipelineProcess], timeout: float = READY_TIMEOUT) -> None:
    """Every pipeline's query started; a refused one (it drops the value) is a usage
    error, any other early exit a VerifierError with its log."""
    def probe():
        waiting = []
        for proc in procs:
            if proc.where.ready.exists():
                continue
            if not proc.alive:
                refused = proc.where.root / "refused.json"
                if refused.exists():
                    raise GiveUp(UsageError(read_json_plain(refused)["error"]))
                raise GiveUp(VerifierError(f"pipeline {proc.name} exited "
                                           f"({proc.returncode}):\n{proc.log_tail(15)}"))
            waiting.append(proc.name)
        return not waiting, waiting

    wait_until(probe, timeout=timeout, what="every pipeline's query to start",
               expected="RUN/pipelines/<name>/ready.json for each",
               describe=lambda w: f"not started yet: {w}", interval=0.5)


def read_json_plain(path: Path) -> dict:
    import orjson

    return orjson.loads(path.read_bytes())


#: a driver's exit code when its query stopped with an error (streaming.pipelines.driver)
EXIT_QUERY_FAILED = 2


def stopped(proc: PipelineProcess) -> bool:
    """Did the pipeline's query stop with an error (its driver exited saying so)? Such a
    query is not restarted: from its checkpoint it would stop again (failOnDataLoss)."""
    return not proc.alive and proc.returncode == EXIT_QUERY_FAILED


def committed_position(where: PipelineLayout) -> dict[str, int]:
    """The live checkpoint's committed end offset per ``"topic-partition"``."""
    ends = committed_end_offsets(where.checkpoint)
    return {f"{t}-{p}": o for (t, p), o in ends.items()}


def drain(run_dir: Path, procs: list[PipelineProcess], entries: dict,
          timeout: float) -> list[str]:
    """Wait until each pipeline committed a batch past the end offsets the drain saw at
    its isolation level; returns what stayed behind (the judge says unseen there). Past
    ``timeout`` it goes on while a pipeline behind still plans or commits batches, as the
    observer's drain does (verifier.orchestration.drain: stall window and cap)."""
    import time

    from verifier.orchestration.drain import CAP_FACTOR, Movement, decide, stall_for

    try:
        ends = read_json(RunLayout(run_dir).drain, "drain",
                         versions=(1,)).get("end_offsets") or {}
    except VerifierError:
        return ["no drain.json: the pipelines' drain was not checked"]
    behind: list[str] = []
    started, movement = time.monotonic(), Movement()

    def probe():
        behind.clear()
        late, marks, now = [], {}, time.monotonic() - started
        for proc in procs:
            if stopped(proc):  # its query ended with an error: nothing more will come
                continue
            iso = entries[proc.where.name]["isolation"]
            mine = set(entries[proc.where.name].get("topics") or ())  # empty: older plans
            pos = committed_position(proc.where)
            planned = offset_log_batches(proc.where.checkpoint)
            marks[f"pipeline/{proc.name}"] = (sorted(pos.items()), planned[-1:])
            for tp, end in sorted((ends.get(iso) or {}).items()):
                if mine and tp.rsplit("-", 1)[0] not in mine:
                    continue  # a topic this pipeline does not read
                if pos.get(tp, 0) < int(end):
                    behind.append(f"{proc.name} {tp} at {pos.get(tp, 0)}/{end}")
                    late.append({"mover": f"pipeline/{proc.name}"})
        movement.look(now, marks)
        if decide(late, movement, now, timeout, stall_for(timeout),
                  CAP_FACTOR * timeout) in ("stalled", "cap"):
            raise GiveUp(UsageError("the pipelines' drain stopped"))
        return not behind, list(behind)

    try:
        wait_until(probe, timeout=CAP_FACTOR * timeout + 5, what="the pipelines' drain",
                   expected="each pipeline's committed position >= the end offsets",
                   describe=lambda b: f"{len(b)} behind: {', '.join(b[:6])}",
                   max_interval=0.5)
    except VerifierError:
        return list(behind)
    return []


def stop_timeout(entries: dict) -> float:
    """How long the drivers may take to stop: longer when one runs its reference."""
    reference = any(e.get("oracle") == "reference" for e in entries.values())
    return REFERENCE_STOP_TIMEOUT if reference else STOP_TIMEOUT


def stop(procs: list[PipelineProcess], timeout: float = STOP_TIMEOUT) -> list[str]:
    """SIGTERM every driver (they stop their query and read their output back at once,
    in parallel); notes for those that did not exit cleanly."""
    notes = []
    for proc in procs:
        if proc.alive:
            try:
                proc.send_signal(signal.SIGTERM)
            except ProcessError:
                pass
    for proc in procs:
        code = proc.terminate(timeout=timeout)
        if code == EXIT_QUERY_FAILED:
            notes.append(f"{proc.name}: its query stopped with an error and was not "
                         "restarted (the verdict gives Spark's message)")
        elif proc.stop_timed_out is not None:
            notes.append(f"{proc.name} did not stop within {proc.stop_timed_out:.0f} s of its "
                         f"SIGTERM and was killed; its threads are in {proc.log_path}")
        elif code not in (0, None):
            notes.append(f"{proc.name} exited {code}: {proc.log_tail(3)}")
    return notes


__all__ = ["EXIT_QUERY_FAILED", "HOLD_MS", "PROCESS_PREFIX", "PipelineProcess",
           "PlannedPipeline", "check_user_pipelines", "committed_position", "drain",
           "for_scenario", "kills_pipelines", "output_topic", "plan_entries",
           "plan_pipelines", "stop", "stopped", "wait_ready"]
