"""One scenario run: setup -> load + faults -> heal -> recover -> drain -> verify -> report.

All four delivery modes run at once, each on its own topic, under the same fault
schedule, read by the same observer: a true side-by-side comparison. Every wait is a
condition with a deadline; the one timed wait is the load phase itself, whose length is
the scenario's definition.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

from verifier.assess.finish import Judged
from verifier.harness.faults.nemesis import Nemesis
from verifier.harness.faults.spec import build_schedule
from verifier.harness.faults.triggers import max_within
from verifier.harness.leftovers import claim
from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics
from verifier.orchestration import apps as APPS
from verifier.orchestration import pipeline_plan as PP
from verifier.orchestration import user_input as UI
from verifier.orchestration.app_reference import run_references
from verifier.orchestration.children import (
    ensure_observer,
    stop_generators,
    stop_now,
    wait_generators_producing,
    wait_observer_ready,
)
from verifier.orchestration.connection_log import save_connections
from verifier.orchestration.drain import DrainIncomplete, drain_to_file
from verifier.orchestration.live import pace_load
from verifier.orchestration.phases import PhaseClock
from verifier.orchestration.planning import (  # noqa: F401 - RunOptions, validate_scenario: re-exported
    ProducerPlan,
    RunOptions,
    _resolve_faults,
    plan_producers,
    transactional_ids,
    validate_scenario,
)
from verifier.orchestration.progress import HistoryTail, ProgressDisplay, snapshot
from verifier.orchestration.scenario import Scenario
from verifier.orchestration.verify import verify
from verifier.rundata.layout import RunLayout
from verifier.rundata.naming import run_id
from verifier.rundata.plan import RunPlan

log = logging.getLogger(__name__)



class ScenarioRun:
    """Everything of one scenario run; :meth:`execute` drives the phases."""

    def __init__(self, env, scenario: Scenario, opts: RunOptions, spark) -> None:
        self.env = env
        self.scenario = scenario
        self.opts = opts
        self.spark = spark
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        if opts.repetition:  # chaos --repeat: OUT/<scenario>/<stamp>-rep2of3, one per run
            k, n = opts.repetition
            stamp += f"-rep{k}of{n}"
        self.run_id = run_id(scenario.name, stamp, opts.seed)  # the prefix of its names
        self.run_dir = Path(opts.out) / scenario.name / stamp
        self.layout = RunLayout(self.run_dir)
        self.logs = self.layout.logs
        self.sink = opts.sink or scenario.sink
        self.plans = plan_producers(scenario, self.run_id, opts)
        self.clock = PhaseClock()
        #: what --fail-fast stopped the load at (None: the load ran its duration)
        self.stopped_early: str | None = None
        self.nemesis: Nemesis | None = None
        self.processes: dict[str, ManagedProcess] = {}
        #: the pipelines under test (verifier.orchestration.pipelines), their drivers
        self.pipes: list = []
        #: the Spark cluster the pipelines run on (--spark-cluster standalone), its
        #: master and workers in ``processes`` (verifier.orchestration.spark_cluster)
        self.spark_cluster = None
        self.database = None  # a database sink's (verifier.orchestration.databases)
        self.pipelines = PP.for_scenario(opts.pipelines, scenario)  # with its variants
        # the topics pipeline files declare, each written by a producer of its own
        self.declared = UI.declared_topics(self.pipelines, self.run_id)
        self.plans += UI.input_producers(self.declared, scenario,
                                         (opts.clients or (opts.client,))[0])
        self.tails = {p.pid: HistoryTail(self.layout.history(p.pid))
                      for p in self.plans}
        self.notes: list[str] = [f"your producer config: {n}" for n in opts.user_notes]
        self.skipped_faults: list[str] = []  # faults of the scenario that did not run
        #: pid -> why its generator exited before producing (RUN/generators-failed.json)
        self.failed_start: dict[str, str] = {}
        self.started_at = time.monotonic()
        self.interrupted = False
        self.follower = None  # verifier.assess.follow.RunFollower, from the setup
        self.drained_at: float | None = None
        self.stopped_at: float | None = None  # the run's processes stopped after the drain
        self._save_connections = None  # copies the proxy's log once (save_connections)
        self.plan = self._plan()
        # the secrets reach the children through their environment, never argv or files
        self.child_env = {**opts.extra_env, **self.plan.child_env()}

    # ----- processes ----------------------------------------------------------------

    def _python(self) -> list[str]:
        return [sys.executable, "-u"]

    def _plan(self, extra: dict | None = None) -> RunPlan:
        """The run as one value: what config.json holds and every child reads."""
        w = self.scenario.workload
        return RunPlan(
            run=self.run_id, scenario=self.scenario.name, seed=self.opts.seed,
            sink=self.sink, bootstrap_servers=self.env.bootstrap_servers,
            producers={p.pid: p for p in self.plans},
            workload={"rate": w.rate, "record_size": w.record_size, "txn_size": w.txn_size,
                      "abort_fraction": w.abort_fraction},
            security=dict(self.env.client_config), spark_master=self.opts.spark_master,
            environment=self.env.name, profile=self.opts.profile, extra=extra or {},
        )  # fmt: skip

    def _generator(self, plan: ProducerPlan) -> ManagedProcess:
        from producers.clients import generator_argv

        argv = generator_argv(plan.spec, self.layout.config, plan.pid)
        proc = ManagedProcess(plan.process_name, argv, self.layout.log(plan.pid),
                              env=self.child_env)
        # the in-transaction trigger reads it (verifier.harness.faults.triggers)
        proc.history = self.layout.history(plan.pid)
        return proc

    def _observer(self) -> ManagedProcess:
        from verifier.orchestration.observer_process import ObserverProcess

        return ObserverProcess(self.run_dir, self.layout.config, self.layout.log("observer"),
                               self.child_env, python=self._python())

    # ----- phases -------------------------------------------------------------------

    def _setup(self) -> list:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        self._broker_settings()
        topics = {p.topic: self.scenario.workload.partitions for p in self.plans
                  if p.topic not in UI.topic_sizes(self.declared)}  # created below
        topics.update(self._pipeline_setup())
        topics.update(APPS.setup(self))  # the applications' instances and output topics
        claim(self.env, self.run_id)  # before creating: `verifier cleanup` after a kill -9
        create_topics(self.env.bootstrap_servers, topics, self.env.replication_factor,
                      **self.plan.security)
        self.env.own_topics(list(topics))
        UI.create_declared(self.env, self.declared, self.plan.security)  # whatever their age
        for p in self.plans:
            self.processes[p.process_name] = self._generator(p)
        self.processes["observer"] = self._observer()
        specs, skipped = _resolve_faults(self.scenario, self.plans, self.run_id, self.env,
                                         self.processes)
        for s in skipped:
            why = f"{s.get('kind')} (the {self.env.name} environment cannot run it)"
            self.skipped_faults.append(why)
            self.notes.append(f"skipped fault {why}")
        schedule = build_schedule(specs, self.opts.seed, self.scenario.workload.duration_s)
        self._write_config(schedule)
        return schedule

    def _pipeline_setup(self) -> dict[str, int]:
        """The pipelines' drivers (not started) and their output topics."""
        from verifier.orchestration.pipelines import PipelineProcess

        topics = {}
        for p in self.pipelines:
            proc = PipelineProcess(self.run_dir, p.name, self.layout.config, self.child_env,
                                   p.spark_version)
            self.pipes.append(proc)
            self.processes[proc.name] = proc
            topics[PP.output_topic(self.run_id, p.name)] = self.scenario.workload.partitions
        from verifier.orchestration import spark_cluster as SC

        self.spark_cluster = SC.cluster_for(self.opts, self.run_dir, len(self.pipes))
        if self.spark_cluster is not None:
            self.processes.update(self.spark_cluster.processes)
        from verifier.orchestration.databases import plan_database

        # a database sink's server (issue 46), stopped after the pipelines
        self.database = plan_database(self.pipelines, self.layout.log("postgresql"))
        if self.database is not None and self.database.local is not None:
            self.processes["postgresql"] = self.database.local.process
        return topics

    def _broker_settings(self) -> None:
        """The scenario's start-time ``[broker]`` settings (or the defaults, after a
        scenario that had some) on the running brokers, and its replication through the
        proxy or not (``proxy_replication``); a dynamic table runs as a ``broker-config``
        fault of the schedule instead."""
        from verifier.harness.faults.kinds import NotApplied

        b = self.scenario.broker
        settings = dict(b.settings) if b is not None and b.apply == "start" else {}
        proxied = self.scenario.proxy_replication
        use = getattr(self.env, "use_broker_settings", None)
        try:
            if use is None:  # an environment without broker control
                if settings or proxied:
                    raise NotApplied(f"the {self.env.name} environment cannot set start-time "
                                     "broker settings")
                return
            note = use(settings, replication_proxied=proxied)
        except NotApplied as exc:
            self.skipped_faults.append(f"[broker] settings ({exc})")
            self.notes.append(f"skipped [broker] settings: {exc}")
            return
        if note:
            self.notes.append(note)

    def _write_config(self, schedule) -> None:
        """config.json, before any child starts: the plan with the resolved faults."""
        extra = {"kafka_version": getattr(self.env, "kafka_version", "unknown"),
                 "scenario_spec": self.scenario.to_json(),
                 "schedule": schedule.to_json(), "notes": list(self.notes)}
        if self.pipelines:
            from verifier.orchestration import databases as D

            own = [p.topic for p in self.plans if not p.mode.startswith(UI.COLUMN_PREFIX)]
            extra["pipelines"] = PP.plan_entries(self.pipelines, self.run_id,
                                                 hold=PP.kills_pipelines(schedule.faults),
                                                 run_topics=own)
            if self.declared:
                extra["user_input"] = UI.plan_entries(self.declared)
            D.add_entries(extra["pipelines"], self.pipelines, self.database, self.run_id)
        if self.opts.apps:
            extra["apps"] = APPS.config_entries(self)
        if self.spark_cluster is not None:
            from verifier.orchestration.spark_cluster import place

            place(extra["pipelines"], self.spark_cluster, schedule.faults)
        self.plan = self._plan(extra)
        self.plan.write(self.layout.config)

    def _load(self, schedule) -> None:
        APPS.start(self)  # consuming (an empty input) before the first record
        for p in self.plans:
            self.processes[p.process_name].start()
        wait_generators_producing(self)
        fault_env = self.env.fault_env(self.processes)
        fault_env.topics = tuple(sorted({p.topic for p in self.plans}))
        fault_env.transactional_ids = transactional_ids(self.plans, self.run_id)
        self.nemesis = Nemesis(schedule, fault_env, self.layout.nemesis,
                               self.run_id)
        with self.nemesis:
            try:
                # The load phase lasts the scenario's duration by definition: this is
                # pacing, not a wait for a condition. The nemesis heals everything on exit.
                if pace_load(self):  # --fail-fast: a forbidden anomaly, stop now
                    with self.clock.phase("heal"):
                        self.nemesis.stop()
                else:
                    # the heal in progress may be a broker restart, which waits up to
                    # ready_timeout for the cluster (30-50 s here after a SIGKILL, more
                    # on a loaded machine): a shorter wait cut healthy restarts off; an
                    # observer kill may also be held back until the observer serves
                    with self.clock.phase("heal"):
                        self.nemesis.wait_done(timeout=fault_env.ready_timeout
                                               + self.nemesis.defer_limit_s + 60
                                               + max_within(schedule.faults))
            except KeyboardInterrupt:  # stopped by a signal: load stops first
                stop_now(self)
                raise

    def execute(self) -> Judged:
        """Run every phase; return the run's judged outcomes (the live path's verdict and
        the batch pass's cross-check), which :func:`verifier.assess.finish.finish` finishes."""
        self.started_at = time.monotonic()
        conn_log = getattr(self.env, "connection_log", None)
        conn_from = conn_log.stat().st_size if conn_log and conn_log.exists() else 0
        display = ProgressDisplay(lambda: snapshot(self))
        try:
            try:
                with self.clock.phase("setup"):
                    schedule = self._setup()
                    self._follow()
                    self.processes["observer"].start()
                    if self.spark_cluster is not None:  # booting while the observer does
                        from verifier.orchestration.spark_cluster import boot

                        boot(self.spark_cluster)
                        self.spark_cluster.wait_workers(len(self.spark_cluster.workers))
                    if self.database is not None:
                        self.database.start()
                    for proc in self.pipes:
                        proc.start()
                    if self.pipes:  # a pipeline that drops the value stops the run here
                        from verifier.orchestration.pipelines import wait_ready

                        wait_ready(self.pipes)
                display.__enter__()
                # The load starts once the observer has run its first batch: the live
                # checks then judge the records while the load goes (the progress line's
                # counts, --fail-fast, an observer kill that hits a running query). Started
                # beside the generators, Spark shared the 2 cores with them and its first
                # batch came after a quick scenario's whole 20-s load (the make chaos of
                # 2026-11-24: "observed rc 0 ru 0" until the drain).
                with self.clock.phase("observer start"):
                    wait_observer_ready(self.processes["observer"])
                with self.clock.phase("load+faults"):
                    self._load(schedule)
                with self.clock.phase("recover"):
                    self.env.recover([p.topic for p in self.plans])
                    stop_generators(self)
                    ensure_observer(self)
                    for proc in self.pipes:  # died on its own: from its checkpoint
                        if not proc.alive and not self._stopped_query(proc):
                            self.notes.append(f"{proc.name} had exited ({proc.returncode}) "
                                              f"and was restarted: {proc.log_tail(3)}")
                            proc.restart()
                with self.clock.phase("drain"):
                    self._drain()
                self.drained_at = time.monotonic()
            except KeyboardInterrupt:
                stop_now(self)
                self.interrupted = True
                raise
            finally:
                for proc in self.processes.values():
                    proc.terminate(timeout=30)
                if self.database is not None:  # its scratch folder
                    self.database.stop()
                if self.spark_cluster is not None:  # the executors' copies of the jars
                    from verifier.orchestration.spark_cluster import tidy

                    tidy(self.spark_cluster)
                self.stopped_at = time.monotonic()
                if conn_log is not None:
                    # after a drain the live verdict comes first: copying waits (at least
                    # CONN_LOG_QUIET_S) for the proxy's close lines, which it does not read
                    self._save_connections = lambda: save_connections(
                        conn_log, conn_from, self.layout.connections)
                    if self.drained_at is None:
                        self.connections_saved()
            # the progress line goes on through the verification, and says so
            with self.clock.phase("verify"):
                judged = verify(self)
        finally:
            display.__exit__(None, None, None)
            if self.follower is not None:
                self.follower.stop()
            self.connections_saved()  # if the verification did not get to it
        return judged

    def _stopped_query(self, proc) -> bool:
        """A pipeline whose query stopped with an error stays stopped (restarted from its
        checkpoint it would stop again); the judge reports it with Spark's message."""
        from verifier.orchestration.pipelines import stopped

        return stopped(proc)

    def _drain(self) -> None:
        topics = [p.topic for p in self.plans]
        try:
            drain_to_file(self.env.bootstrap_servers, topics, self.run_dir,
                          timeout=self.scenario.drain_timeout_s, **self.plan.security)
        except DrainIncomplete as exc:
            self.notes.append(f"drain incomplete: {exc}")
        from streaming.plain_reader import read_all

        read_all(self.env.bootstrap_servers, topics, self.run_id, self.run_dir,
                 **self.plan.security)
        self.notes += APPS.drain_and_read_back(self, timeout=self.scenario.drain_timeout_s)
        self.notes += run_references(self)  # the aggregating applications' fault-free runs
        if self.pipes:
            from verifier.orchestration import pipelines as P

            behind = P.drain(self.run_dir, self.pipes, self.plan.pipelines,
                             timeout=self.scenario.drain_timeout_s)
            if behind:
                self.notes.append(f"pipelines' drain incomplete: {'; '.join(behind[:6])}")
            self.notes += P.stop(self.pipes, P.stop_timeout(self.plan.pipelines))

    def _follow(self) -> None:
        """Follow the run's files from the load's start: the verdict right after the drain."""
        from verifier.assess.follow import RunFollower
        from verifier.judge.checks.load import load_config

        self.follower = RunFollower(self.run_dir, load_config(self.layout.config)).start()

    def connections_saved(self) -> None:
        """This run's part of the proxy's connection log copied into the run (once)."""
        save, self._save_connections = self._save_connections, None
        if save is not None:
            save()


def spark_env() -> dict:
    """Child processes inherit the loopback binding Spark needs on this machine."""
    return {"SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
