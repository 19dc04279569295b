"""Topic administration with kafka-python: create, wait for in-sync replicas, end offsets.

Works against the local cluster and an external one alike (``client_config`` carries
security settings for the latter).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import kafka.errors as KE
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception_type,
    stop_after_delay,
    wait_random_exponential,
)

from verifier.rundata.waiting import wait_until

log = logging.getLogger(__name__)


@contextmanager
def admin(bootstrap_servers: str, timeout: float = 60,
          **client_config) -> Iterator[KafkaAdminClient]:
    """An admin client, retrying the bootstrap while brokers are starting."""
    client = None
    for attempt in Retrying(
        retry=retry_if_exception_type((KE.KafkaTimeoutError, KE.KafkaConnectionError)),
        stop=stop_after_delay(timeout),
        wait=wait_random_exponential(multiplier=0.5, max=5),
        before_sleep=before_sleep_log(log, logging.INFO),
        reraise=True,
    ):
        with attempt:
            client = KafkaAdminClient(bootstrap_servers=bootstrap_servers,
                                      request_timeout_ms=15000,
                                      **{"client_id": "verifier.admin", **client_config})
    assert client is not None
    try:
        yield client
    finally:
        client.close()


def create_topics(bootstrap_servers: str, topics: dict[str, int], replication_factor: int,
                  configs: dict[str, str] | None = None, timeout: float = 60,
                  **client_config) -> None:
    """Create ``{name: partitions}`` topics (existing ones are an error) and wait until
    every partition has a leader and a full ISR."""
    with admin(bootstrap_servers, **client_config) as a:
        create_while_brokers_register(a, topics, replication_factor, configs, timeout)
    wait_in_sync(bootstrap_servers, list(topics), timeout=timeout, **client_config)


def delete_topics(bootstrap_servers: str, topics: list[str], timeout: float = 60,
                  **client_config) -> None:
    """Delete ``topics`` (a topic already gone is not an error): what a benchmark
    created on a cluster it did not start goes when its measurement is done."""
    with admin(bootstrap_servers, **client_config) as a:
        existing = set(a.list_topics())
        present = [t for t in topics if t in existing]
        if present:
            a.delete_topics(present, timeout_ms=int(timeout * 1000))


def create_while_brokers_register(a, topics: dict[str, int], replication_factor: int,
                                  configs: dict[str, str] | None, timeout: float) -> None:
    """CreateTopics, retried while the controller refuses the replication factor: a broker
    that every broker's metadata already lists may not be registered with the controller
    yet (seen under load right after start-up: "InvalidReplicationFactorError"). A retry
    creates only what is still missing; a topic that existed before is still an error."""
    before = set(a.list_topics())
    for attempt in Retrying(
        retry=retry_if_exception_type(KE.InvalidReplicationFactorError),
        stop=stop_after_delay(timeout),
        wait=wait_random_exponential(multiplier=0.5, max=3),
        before_sleep=before_sleep_log(log, logging.INFO),
        reraise=True,
    ):
        with attempt:
            now = set(a.list_topics())
            new = [NewTopic(name, parts, replication_factor, topic_configs=dict(configs or {}))
                   for name, parts in topics.items() if name in before or name not in now]
            if new:
                a.create_topics(new, timeout_ms=int(timeout * 1000))


def partition_states(bootstrap_servers: str, topics: Iterable[str], **client_config) -> dict:
    """``{(topic, partition): {"leader", "replicas", "isr"}}`` as the cluster reports it."""
    with admin(bootstrap_servers, **client_config) as a:
        described = a.describe_topics(list(topics))
    states = {}
    for t in described:
        if t["error_code"]:
            raise KE.for_code(t["error_code"])(t["name"])
        for p in t["partitions"]:
            states[(t["name"], p["partition_index"])] = {
                "leader": p["leader_id"],
                "replicas": sorted(p["replica_nodes"]),
                "isr": sorted(p["isr_nodes"]),
            }
    return states


def wait_in_sync(bootstrap_servers: str, topics: list[str], timeout: float = 120,
                 **client_config) -> dict:
    """Wait until every partition of ``topics`` has a leader and ISR == replicas."""
    def probe():
        states = partition_states(bootstrap_servers, topics, **client_config)
        behind = {f"{t}-{p}": s for (t, p), s in states.items()
                  if s["leader"] < 0 or s["isr"] != s["replicas"]}
        return bool(states) and not behind, behind or states

    return wait_until(probe, timeout=timeout, what=f"partitions of {topics} to be in sync",
                      expected="a leader and ISR == replicas for every partition",
                      describe=lambda b: f"not in sync: {b}")


def log_start_offsets(bootstrap_servers: str, topics: list[str],
                      **client_config) -> dict[tuple[str, int], int]:
    """Log start offset per partition: the earliest offset a reader can fetch (above 0
    once retention or a deletion removed the records before it)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False,
                             **{"client_id": "verifier.admin", **client_config})
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        return {(tp.topic, tp.partition): off
                for tp, off in consumer.beginning_offsets(tps).items()}
    finally:
        consumer.close()


def end_offsets(bootstrap_servers: str, topics: list[str], isolation_level: str,
                **client_config) -> dict[tuple[str, int], int]:
    """End offset per partition at an isolation level: the last stable offset under
    read_committed, the high watermark under read_uncommitted."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers,
                             isolation_level=isolation_level, enable_auto_commit=False,
                             **{"client_id": "verifier.admin", **client_config})
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        return {(tp.topic, tp.partition): off for tp, off in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()
