"""The ``retention`` fault: the run's topics keep their records only a few seconds.

    [[faults]]
    kind = "retention"
    target = { all = true }                      # every topic the run's producers write
    start = 6
    duration = 25
    params = { retention_ms = 5000, segment_ms = 1000, trigger = "pipelines-down" }

At its start it sets ``retention.ms`` and ``segment.ms`` on every run topic with
IncrementalAlterConfigs (any cluster: topic settings are dynamic), so each segment rolls
after ``segment_ms`` and is deleted once its newest record is ``retention_ms`` old; at its
heal it deletes the two overrides again (the broker's default retention holds from then
on; what was deleted stays deleted). The broker deletes on its retention check, every
``log.retention.check.interval.ms``: the local cluster checks every second, a broker with
the default (5 minutes) may delete nothing in a short window, and then the fault acted
on nothing (its exposure says so).

The trigger ``pipelines-down`` starts it once every pipeline under test of the run is
down (killed by a ``process-kill`` and not restarted yet): the pipelines are held back
while records they have not read are deleted, which is what Spark's ``failOnDataLoss``
decides about (issue 34). Start and heal details record each partition's log start
offset (the earliest offset a reader can still fetch) and end offset, so the deletion is
in the nemesis history: exposure and evidence are computed from them.
"""

from __future__ import annotations

from verifier.harness.faults.kinds.base import Kind, NotApplied, ScheduledFault, all_target
from verifier.harness.faults.triggers import Gate, NotTriggered
from verifier.judge.faults.family import PIPELINE_PREFIX
from verifier.judge.faults.retention import FAMILY
from verifier.rundata.errors import UsageError, VerifierError

#: the topic settings the fault sets, and their defaults
DEFAULTS = {"retention_ms": 5000, "segment_ms": 1000}
SETTINGS = {"retention_ms": "retention.ms", "segment_ms": "segment.ms"}


def validate_params(params: dict) -> None:
    """``retention_ms`` and ``segment_ms``: positive integers (milliseconds)."""
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise UsageError(f"unknown params {sorted(unknown)} (allowed: {sorted(DEFAULTS)})")
    for k, v in params.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise UsageError(f"params.{k} must be a positive number of milliseconds, "
                             f"not {v!r}")


def topic_settings(params: dict) -> dict[str, str]:
    return {SETTINGS[k]: str(params.get(k, d)) for k, d in DEFAULTS.items()}


def offsets(bootstrap_servers: str, topics, **client_config) -> tuple[dict, dict]:
    """({"topic-p": log start offset}, {"topic-p": high watermark}) of every partition."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False,
                             **{"client_id": "verifier.admin", **client_config})
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        first, last = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
    finally:
        consumer.close()
    key = lambda tp: f"{tp.topic}-{tp.partition}"  # noqa: E731
    return ({key(tp): int(o) for tp, o in sorted(first.items())},
            {key(tp): int(o) for tp, o in sorted(last.items())})


def _alter(env, topics, ops: dict) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    from verifier.harness.topics import admin

    resources = [ConfigResource(ConfigResourceType.TOPIC, t, dict(ops)) for t in topics]
    with admin(env.bootstrap_servers, **env.client_config) as a:
        result = a.alter_configs(resources, incremental=True)
    bad = {t: r for t, r in (result.get("topic") or {}).items() if r != "OK"}
    if bad:
        raise VerifierError(f"retention: the brokers refused {sorted(ops)}: {bad}")


def pipelines_down(env) -> tuple[dict | None, str]:
    """The trigger's probe: found once every pipeline's driver is not running."""
    procs = {n: p for n, p in env.processes.items() if n.startswith(PIPELINE_PREFIX)}
    if not procs:
        return None, "no pipeline under test in this run"
    running = sorted(n for n, p in procs.items() if p.alive)
    if running:
        return None, f"still running: {', '.join(running)}"
    return {"pipelines_down": sorted(procs)}, ""


def start_retention(fault: ScheduledFault, env, state: dict, gate: Gate | None = None) -> dict:
    """Set the short retention on the run's topics (after the trigger, if any)."""
    topics = list(env.topics)
    if not topics:
        raise NotApplied("retention: the run has no producer topics")
    settings = topic_settings(fault.action_params)

    def act(found: dict) -> dict:
        log_start, end = offsets(env.bootstrap_servers, topics, **env.client_config)
        _alter(env, topics, {k: ("SET", v) for k, v in settings.items()})
        state["topics"] = topics
        return {**found, "topics": topics, "settings": settings, "log_start": log_start,
                "end": end}

    trigger = fault.trigger
    if trigger is None:
        return act({})
    try:
        return (gate or Gate()).until(trigger, lambda: pipelines_down(env), act)
    except NotTriggered as exc:
        raise NotApplied(str(exc)) from None


def heal_retention(fault: ScheduledFault, env, state: dict) -> dict:
    """Record how far retention deleted, then drop the overrides (the default again)."""
    topics = state["topics"]
    log_start, end = offsets(env.bootstrap_servers, topics, **env.client_config)
    _alter(env, topics, {k: ("DELETE", None) for k in SETTINGS.values()})
    return {"topics": topics, "log_start": log_start, "end": end}


KINDS = (Kind("retention", FAMILY, start_retention, heal_retention,
              all_target("every topic of the run"), validate_params,
              triggers=("pipelines-down",)),)

__all__ = ["DEFAULTS", "KINDS", "heal_retention", "offsets", "pipelines_down", "start_retention",
           "topic_settings", "validate_params"]
