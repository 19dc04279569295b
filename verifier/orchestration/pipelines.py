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
import time
from pathlib import Path

from verifier.harness.procs import ManagedProcess, child_pids
from verifier.orchestration.pipeline_plan import PROCESS_PREFIX, python_for
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

READY_TIMEOUT = 240.0  # a Spark JVM per pipeline, next to the observer's, on 2 cores
#: the read-back after the stop: a Spark job over the output (and a Delta log replay);
#: a pipeline judged by the reference oracle also runs twice more without faults
STOP_TIMEOUT = 240.0
REFERENCE_STOP_TIMEOUT = 900.0


class PipelineProcess(ManagedProcess):
    """A pipeline's driver; knows its checkpoint (the checkpoint-lost fault moves it)."""

    def __init__(self, run_dir: Path, name: str, config: Path, env: dict,
                 spark_version: str | None = None) -> None:
        self.where = PipelineLayout(run_dir, name)
        # its own PySpark (--spark-version) or the project's
        python, env = python_for(spark_version, env)
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


__all__ = ["EXIT_QUERY_FAILED", "PipelineProcess", "committed_position", "drain", "stop",
           "stopped", "wait_ready"]
