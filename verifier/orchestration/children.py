"""A run's child processes beyond their start: waiting until they serve or produce, and
stopping them (each ``run`` a :class:`~verifier.orchestration.orchestrator.ScenarioRun`:
its plans, processes, history tails and notes)."""

from __future__ import annotations

import logging
import signal
import time

from verifier.harness.procs import ManagedProcess
from verifier.orchestration.planning import ProducerPlan
from verifier.rundata.errors import ProcessError, VerifierError
from verifier.rundata.startfail import describe, last_line, record_start_failure
from verifier.rundata.waiting import GiveUp, wait_until

log = logging.getLogger(__name__)

OBSERVER_START_TIMEOUT = 180.0  # Spark JVM start + first batch on a loaded 2-core machine
GENERATOR_STOP_TIMEOUT = 90.0  # a clean stop may wait for a commit or abort to finish
GENERATOR_START_TIMEOUT = 120.0  # connect + init_transactions on a loaded machine


def wait_observer_ready(obs: ManagedProcess) -> None:
    """Until the observer has written a batch at both isolation levels."""

    def ready():
        if not obs.alive:
            raise GiveUp(VerifierError(f"the observer exited ({obs.returncode}):\n"
                                       f"{obs.log_tail(15)}"))
        return obs.serving(), "no batch written at both levels yet"

    wait_until(ready, timeout=OBSERVER_START_TIMEOUT, what="the observer's first batch",
               expected="a batch written at each isolation level since its start",
               interval=0.5)


def wait_generators_producing(run) -> None:
    """The fault clock starts once every generator has completed a send: a Python
    process that connects, and for transactions runs init_transactions, takes a few
    seconds, and a kill before that would exercise nothing.

    A generator that exits before producing (a setting its client rejects at
    construction, a missing codec) is recorded in RUN/generators-failed.json and left
    out: the others run and are judged, its own column is UNKNOWN with that one line.
    Only when every generator failed does the run stop."""
    def probe():
        waiting = []
        for p in run.plans:
            if p.pid in run.failed_start:
                continue
            t = run.tails[p.pid].poll()
            if t.ok + t.info + t.fail:
                continue
            proc = run.processes[p.process_name]
            if not proc.alive:
                _record_start_failure(run, p, proc)
            else:
                waiting.append(p.pid)
        if len(run.failed_start) == len(run.plans):
            raise GiveUp(VerifierError("every generator exited before producing: "
                                       + "; ".join(f"{pid} {why}" for pid, why
                                                   in run.failed_start.items())))
        return not waiting, waiting

    wait_until(probe, timeout=GENERATOR_START_TIMEOUT, what="every generator to produce",
               expected="a completed send in every history",
               describe=lambda w: f"no completed send yet from {w}", interval=0.2)


def _record_start_failure(run, plan: ProducerPlan, proc: ManagedProcess) -> None:
    entry = record_start_failure(run.layout.start_failures, plan.pid, proc.returncode,
                                 last_line(proc.log_tail(20)))
    run.failed_start[plan.pid] = describe(entry)
    log.info("generator %s %s", plan.pid, run.failed_start[plan.pid])


def stop_now(run) -> None:
    """Every child of the run: SIGTERM to all at once (generators first), then
    SIGKILL what has not exited within a few seconds."""
    procs = [run.processes[p.process_name] for p in run.plans]
    procs += [p for p in run.processes.values() if p not in procs]
    for proc in procs:
        if proc.alive:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 3
    for proc in procs:
        if not proc.alive:
            continue
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except VerifierError:  # not gone within the shared 3 s
            proc.kill()


def ensure_observer(run) -> None:
    """An observer that died on its own (not by a fault, which heal restarts) is
    restarted from its checkpoint, and the run says so."""
    obs = run.processes["observer"]
    if not obs.alive:
        run.notes.append(f"the observer had exited ({obs.returncode}) and was "
                          f"restarted: {obs.log_tail(3)}")
        obs.restart()


def stop_generators(run) -> None:
    """Every generator stops cleanly, all at once: each flushes (and a transactional
    one ends its transaction) in parallel, not one after the other."""
    procs = [run.processes[p.process_name] for p in run.plans]
    for proc in procs:
        if proc.alive:
            try:
                proc.send_signal(signal.SIGTERM)
            except ProcessError:  # it exited just now: terminate() below says how
                pass
    for p, proc in zip(run.plans, procs, strict=True):
        code = proc.terminate(timeout=GENERATOR_STOP_TIMEOUT)
        if code not in (0, None) and p.pid not in run.failed_start:  # said once
            run.notes.append(f"{p.pid} exited {code}: {proc.log_tail(3)}")
