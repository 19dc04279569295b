"""The consumer applications under test in a run (issue 47): their instances as managed
processes, their output topics, and after the load their catch-up, stop and read-back.

Each application is N instances (``app/<name>/<i>``), started with the environment
contract (verifier.rundata.apps) before the generators, so they consume while the load
goes and the faults act. After the load the drain waits until the application's group
has committed up to the input's read_committed end offsets (or gives up at the drain's
limit: what it did not reach is judged unseen, never lost), stops the instances
(SIGTERM), then reads the output topic back at both isolation levels and the group's
committed offsets into RUN/apps/<name>/ (verifier.judge.application judges them).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pyarrow as pa

from verifier.harness.procs import ManagedProcess
from verifier.judge import app_gave_up as G
from verifier.orchestration import group_admin as S
from verifier.rundata import apps as A
from verifier.rundata.layout import RunLayout

log = logging.getLogger(__name__)

STOP_TIMEOUT = 30.0  # a clean stop: the copier finishes its batch, closes its clients
READ_TIMEOUT = 120.0


class AppInstance(ManagedProcess):
    """One instance of an application; ``state_file`` is where it says what it is doing
    (the presets do; a kill's detail reads it: verifier.harness.faults.kinds.application)."""

    def __init__(self, run_dir: Path, app: A.PlannedApp, instance: int, env: dict) -> None:
        where = A.AppLayout(run_dir, app.name)
        self.state_file = where.state_file(instance)
        super().__init__(app.process_name(instance), list(app.argv),
                         RunLayout(run_dir).log(where.log_name(instance)),
                         env={**env, A.ENV_STATE_FILE: str(self.state_file)})


def setup(run) -> dict[str, int]:
    """The instances (not started) in ``run.processes``, and the output topics to
    create (as many partitions as the input's: the presets keep the partition)."""
    topics = {}
    inputs = input_topics(run)
    for app in run.opts.apps:
        A.AppLayout(run.run_dir, app.name).root.mkdir(parents=True, exist_ok=True)
        for i in range(app.instances):
            env = {**run.child_env, **A.environment(run.run_id, app.name,
                                                    run.env.bootstrap_servers, inputs, i,
                                                    group_protocol=app.group_protocol)}
            proc = AppInstance(run.run_dir, app, i, env)
            run.processes[proc.name] = proc
        topics[A.output_topic(run.run_id, app.name)] = run.scenario.workload.partitions
    return topics


def input_topics(run) -> list[str]:
    """What the applications read: the run's producer topics."""
    return sorted({p.topic for p in run.plans})


def config_entries(run) -> dict:
    """config.json ``apps``."""
    inputs = input_topics(run)
    return {a.name: A.config_entry(a, run.run_id, inputs) for a in run.opts.apps}


def instances(run) -> list[AppInstance]:
    return [p for p in run.processes.values() if isinstance(p, AppInstance)]


def start(run) -> None:
    for proc in instances(run):
        proc.start()


def _client_config(run) -> dict:
    return dict(run.plan.security)


def committed_offsets(bootstrap: str, group: str, **client_config) -> dict[str, int]:
    """The group's committed offset per ``"topic-partition"``."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), **client_config)
    try:
        # kafka-python 3.x: group id -> {TopicPartition: OffsetAndMetadata}
        got = admin.list_group_offsets({group: None}).get(group) or {}
    finally:
        admin.close()
    return {f"{tp.topic}-{tp.partition}": int(om.offset) for tp, om in got.items()
            if om.offset is not None and om.offset >= 0}


def end_offsets(bootstrap: str, topics: list[str], isolation: str,
                 **client_config) -> dict[str, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None,
                             isolation_level=isolation, enable_auto_commit=False,
                             **client_config)
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        return {f"{tp.topic}-{tp.partition}": int(o)
                for tp, o in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def behind(ends: dict[str, int], committed: dict[str, int]) -> dict[str, str]:
    """The input partitions whose committed offset is short of their end (pure)."""
    return {tp: f"{committed.get(tp, 0)}/{end}" for tp, end in sorted(ends.items())
            if end > 0 and committed.get(tp, 0) < end}


def repartition_topics(topics, group: str) -> set[str]:
    """Kafka Streams' repartition topics of application ``group`` among ``topics``
    (``<application.id>-<name>-repartition``)."""
    return {t for t in topics if t.startswith(f"{group}-") and t.endswith("-repartition")}


def _topics(bootstrap: str, **client_config) -> set[str]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None,
                             enable_auto_commit=False, **client_config)
    try:
        return set(consumer.topics())
    finally:
        consumer.close()


def group_behind(bootstrap: str, group: str, ends: dict[str, int],
                 **client_config) -> dict[str, str]:
    """The partitions the group has not committed up to their end: the input's (``ends``)
    and those of the other topics it commits (a Kafka Streams repartition topic, read at
    read_committed now: it grows until the input is done)."""
    committed = committed_offsets(bootstrap, group, **client_config)
    inputs = {tp.rsplit("-", 1)[0] for tp in ends}
    # a repartition topic the group has not committed yet counts too: with long
    # transactions (KAFKA-20685's preset) the input can be committed before the count
    # stage committed anything of it, and the wait would end with the stage behind
    internal = sorted(({tp.rsplit("-", 1)[0] for tp in committed} |
                       repartition_topics(_topics(bootstrap, **client_config), group)) - inputs)
    more = end_offsets(bootstrap, internal, "read_committed", **client_config) \
        if internal else {}
    return behind({**ends, **more}, committed)


def _env_of(run, app) -> dict:
    first = next(p for p in instances(run) if p.name == app.process_name(0))
    return {**os.environ, **first.env}


def _position(run, app, bootstrap: str, group: str, extra: dict) -> dict[str, int]:
    """The group's committed offsets, or a share group's start offsets (KIP-932)."""
    if not S.is_share(app):
        return committed_offsets(bootstrap, group, **extra)
    return S.share_offsets(app, _env_of(run, app))


def _group_facts(run, app) -> dict:
    """readback.json's facts of the group: a share group's last attempts and limit; under
    ``--group-protocol`` the protocol asked and the group's type as the broker describes
    it (a Java preset's; None for a command: not asked)."""
    if S.is_share(app):
        attempts, limit = S.last_attempts(A.AppLayout(run.run_dir, app.name), app.instances)
        return {"group_type": "share", "last_attempts": attempts, "delivery_limit": limit}
    if not app.group_protocol:
        return {}
    seen = S.group_type(app, _env_of(run, app)) if app.runtime == "java" else None
    return {"group_protocol": app.group_protocol, "group_type_seen": seen}


def drain_and_read_back(run, timeout: float) -> list[str]:
    """Wait for each application's group to commit up to the input's read_committed end
    (at most ``timeout`` s in all), stop the instances, read back; notes for the run."""
    if not run.opts.apps:
        return []
    notes = []
    bootstrap, extra = run.env.bootstrap_servers, _client_config(run)
    inputs = input_topics(run)
    ends = end_offsets(bootstrap, inputs, "read_committed", **extra)
    deadline = time.monotonic() + timeout
    short_of: dict[str, dict] = {}
    for app in run.opts.apps:
        group = A.group_id(run.run_id, app.name)
        short = {}
        quiet = S.Quiet()
        while time.monotonic() < deadline:
            short = short_of[app.name] = (
                behind(ends, _position(run, app, bootstrap, group, extra)) if S.is_share(app)
                else group_behind(bootstrap, group, ends, **extra))
            if short and S.is_share(app) and quiet.settled(
                    short, A.AppLayout(run.run_dir, app.name), app.instances):
                notes.append(f"app {app.name}: its share group's start offsets stayed short "
                             f"of the input's end for {S.SETTLE_S:.0f} s with no instance in "
                             f"a batch (the broker moves them lazily): what is missing past "
                             f"them is judged unseen")
                break
            dead = [p.name for p in instances(run) if p.name.startswith(
                f"{A.PROCESS_PREFIX}/{app.name}/") and not p.alive]
            for name in dead:  # exited on its own: the drain needs it consuming
                notes.append(f"{name} had exited ({run.processes[name].returncode}) and "
                             f"was restarted: {run.processes[name].log_tail(3)}")
                run.processes[name].restart()
            if not short:
                break
            time.sleep(1.0)
        if short:
            where = "; ".join(f"{k} {v}" for k, v in list(short.items())[:6])
            notes.append(f"app {app.name}: its group did not commit up to the input's end "
                         f"within the drain ({where})")
    for proc in instances(run):
        proc.terminate(timeout=STOP_TIMEOUT)
    for app in run.opts.apps:
        where = A.AppLayout(run.run_dir, app.name)
        said = G.note(app.name, G.gave_up(_states(where, app.instances)))
        notes += [said] if said else []
        try:
            rows = {iso: read_output(bootstrap, A.output_topic(run.run_id, app.name),
                                     run.run_id, iso, **extra)
                    for iso in ("read_committed", "read_uncommitted")
                    if app.oracle == "identity"}  # else its state: app_reference
            committed = _position(run, app, bootstrap, A.group_id(run.run_id, app.name), extra)
            A.write_readback(where, rows, {"committed": committed, "input_ends": ends,
                                           "behind": short_of.get(app.name) or {},
                                           **_group_facts(run, app)})
        except Exception as exc:  # noqa: BLE001 - its columns are UNKNOWN with this
            log.warning("read-back of app %s", app.name, exc_info=True)
            A.write_readback(where, {}, {"error": f"{type(exc).__name__}: {exc}"})
            notes.append(f"app {app.name}: its output could not be read back: {exc}")
    return notes


def _states(where: A.AppLayout, instances: int) -> dict[int, dict]:
    """Instance -> its state file's last document (those that wrote one)."""
    out = {}
    for i in range(instances):
        try:
            out[i] = json.loads(where.state_file(i).read_text())
        except (OSError, ValueError):
            continue
    return out


def read_output(bootstrap: str, topic: str, run_id: str, isolation: str,
                timeout: float = READ_TIMEOUT, **client_config) -> pa.Table:
    """The output topic from its start to its end at ``isolation``, decoded
    (READBACK_SCHEMA)."""
    from streaming.observations import decode_row
    from streaming.pipelines.readback import read_whole
    from streaming.plain_reader import identity_of

    rows: list[dict] = []

    def keep(m) -> None:
        d = decode_row(run_id, identity_of(m))
        rows.append({k: d.get(k) for k in ("run", "pid", "ses", "p", "seq", "txn", "ts_send",
                                           "foreign", "error")}
                    | {"batch": None, "task": None, "out_topic": m.topic,
                       "out_partition": m.partition, "out_offset": m.offset})

    read_whole(bootstrap, topic, keep, isolation=isolation, timeout=timeout,
               what=f"the read-back of {topic} at {isolation}", **client_config)
    return pa.Table.from_pylist(rows, schema=A.READBACK_SCHEMA)


__all__ = ["AppInstance", "behind", "committed_offsets", "config_entries",
           "drain_and_read_back", "end_offsets", "group_behind", "input_topics",
           "read_output", "setup", "start"]
