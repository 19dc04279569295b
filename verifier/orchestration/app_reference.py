"""The reference oracle's runs for aggregating applications (issue 47): after the drain,
each application judged by the reference (a preset whose ``oracle`` is ``reference``,
e.g. the Streams count per key) has its output read back as a state per key at both
isolation levels, then runs once more **without faults**: one instance of the same
program, with a fresh group (application id) and a fresh output topic of its own, both
``<run>.app.<name>.reference...``, reading the input topics as the faulted run left them
from their start (a new group starts at the earliest offset). When its group has
committed everything (the input and its own repartition topics, as the drain waits for
the faulted instances), it is stopped and its output read back at read_committed
(verifier.rundata.app_reference; verifier.judge.app_reference compares).

One fault-free run, not the pipelines' two: a count is a function of the input log, so
no column can vary between fault-free runs (a second run would cost another JVM and
another pass over the input for nothing to find). A reference run that fails, or does
not catch up within its limit, is recorded as an error: its application's columns are
UNKNOWN with it, never PASS.
"""

from __future__ import annotations

import logging
import time

from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics
from verifier.orchestration import apps as APPS
from verifier.rundata import app_reference as R
from verifier.rundata import apps as A
from verifier.rundata.layout import RunLayout

log = logging.getLogger(__name__)

#: the reference run's limit: a JVM start, a group join, the whole input once, and under
#: at_least_once a commit every 30 s (Streams' default commit interval)
REFERENCE_TIMEOUT = 240.0
ISOLATIONS = ("read_committed", "read_uncommitted")


def judged_by_reference(app: A.PlannedApp) -> bool:
    return app.oracle == "reference"


def read_state(bootstrap: str, topic: str, isolation: str, **client_config):
    """An output topic from its start to its end at ``isolation``: each record's key and
    value as text, in read order (verifier.rundata.app_reference.STATE_SCHEMA)."""
    from streaming.pipelines.readback import read_whole

    rows: list[dict] = []

    def text(b) -> str | None:
        return None if b is None else b.decode("utf-8", "replace")

    def keep(m) -> None:
        rows.append({"key": text(m.key), "value": text(m.value),
                     "out_partition": m.partition, "out_offset": m.offset})

    read_whole(bootstrap, topic, keep, isolation=isolation, timeout=APPS.READ_TIMEOUT,
               what=f"the read-back of {topic} at {isolation}", **client_config)
    return R.state_table(rows)


def run_references(run) -> list[str]:
    """For each application judged by the reference: its state read back, its
    fault-free run, that run's state read back; notes for the run."""
    notes = []
    for app in [a for a in run.opts.apps if judged_by_reference(a)]:
        where = A.AppLayout(run.run_dir, app.name)
        extra = dict(run.plan.security)
        try:
            for iso in ISOLATIONS:
                R.write_state(R.state_path(where, iso), read_state(
                    run.env.bootstrap_servers, A.output_topic(run.run_id, app.name), iso,
                    **extra))
        except Exception as exc:  # noqa: BLE001 - its columns are UNKNOWN with this
            log.warning("read-back of app %s", app.name, exc_info=True)
            R.write_info(where, {"error": f"its output could not be read back: {exc}"})
            notes.append(f"app {app.name}: its output could not be read back: {exc}")
            continue
        info = reference_run(run, app, where, extra)
        R.write_info(where, info)
        if info.get("error"):
            notes.append(f"app {app.name}: its fault-free reference run: {info['error']}")
    return notes


def reference_run(run, app: A.PlannedApp, where: A.AppLayout, extra: dict,
                  timeout: float = REFERENCE_TIMEOUT) -> dict:
    """One fault-free instance of ``app`` over the whole input: reference.json's body."""
    bootstrap = run.env.bootstrap_servers
    name = f"{app.name}.{R.SUFFIX}"
    group, topic = R.reference_group(run.run_id, app.name), R.reference_output(
        run.run_id, app.name)
    inputs = APPS.input_topics(run)
    start = time.monotonic()
    proc = None
    info: dict = {"group": group, "output_topic": topic, "instances": 1}
    try:
        create_topics(bootstrap, {topic: run.scenario.workload.partitions},
                      run.env.replication_factor, **extra)
        run.env.own_topics([topic])
        env = {**run.child_env, **A.environment(run.run_id, name, bootstrap, inputs, 0,
                                                where.root / R.SUFFIX / "0.state.json")}
        (where.root / R.SUFFIX).mkdir(parents=True, exist_ok=True)
        proc = ManagedProcess(f"{A.PROCESS_PREFIX}/{name}/0", list(app.argv),
                              RunLayout(run.run_dir).log(f"app-{name}-0"), env=env)
        proc.start()
        ends = APPS.end_offsets(bootstrap, inputs, "read_committed", **extra)
        short: dict = {"-": "not yet asked"}
        while time.monotonic() - start < timeout and proc.alive:
            short = APPS.group_behind(bootstrap, group, ends, **extra)
            if not short:
                break
            time.sleep(1.0)
        info["committed"] = APPS.committed_offsets(bootstrap, group, **extra)
        if not proc.alive:
            info["error"] = (f"it exited ({proc.returncode}) before it caught up: "
                             f"{proc.log_tail(3)}")
        elif short:
            info["error"] = (f"it did not commit up to the input's end within {timeout:.0f} "
                             f"s ({'; '.join(f'{k} {v}' for k, v in list(short.items())[:6])})")
        proc.terminate(timeout=APPS.STOP_TIMEOUT)
        if "error" not in info:
            state = read_state(bootstrap, topic, "read_committed", **extra)
            R.write_state(R.reference_state_path(where), state)
            info["rows"] = state.num_rows
    except Exception as exc:  # noqa: BLE001 - its columns are UNKNOWN with this
        log.warning("reference run of app %s", app.name, exc_info=True)
        info["error"] = f"{type(exc).__name__}: {exc}"
        if proc is not None and proc.alive:
            proc.terminate(timeout=APPS.STOP_TIMEOUT)
    info["seconds"] = round(time.monotonic() - start, 1)
    return info


__all__ = ["judged_by_reference", "read_state", "reference_run", "run_references"]
