"""Did a commit that was never answered happen? Read it back from the log.

A transactional generator killed after it invoked ``commit_transaction`` (or whose commit
call ended ``info``) cannot tell from its history whether the coordinator committed.
Redoing such a transaction blindly duplicates it when the commit did happen: the
application's mistake, not Kafka's, and exactly what the verifier must not blame on the
transactional mode. The new producer's ``init_transactions`` makes the coordinator finish
the old transaction (complete a prepared commit, abort an open one) and write its markers;
after that, a ``read_committed`` fetch at an offset the old session had appended returns
that record if and only if its transaction committed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from kafka import KafkaConsumer, TopicPartition

from producers import config as cfg


def commit_visible(bootstrap_servers: str, settings: Mapping[str, Any], topic: str,
                   probe: Sequence[tuple[int, int]], timeout_s: float = 30.0) -> bool | None:
    """``True``: a probed record is visible at read_committed (committed); ``False``: the
    read_committed position passed every probed offset without returning it (aborted);
    ``None``: it could not be told within ``timeout_s``."""
    if not probe:
        return None
    try:
        with cfg.quiet_kafka_logs():
            return _read_back(bootstrap_servers, settings, topic, probe, timeout_s)
    except Exception as exc:  # noqa: BLE001 - unknown is a safe answer: do not redo
        print(f"read-back of {topic} {list(probe)}: {type(exc).__name__}: {exc}", flush=True)
        return None


def _read_back(bootstrap_servers: str, settings: Mapping[str, Any], topic: str,
               probe: Sequence[tuple[int, int]], timeout_s: float) -> bool | None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers.split(","), group_id=None,
                             enable_auto_commit=False, isolation_level="read_committed",
                             **cfg.client_security(settings))
    try:
        want = {TopicPartition(topic, p): off for p, off in probe}
        consumer.assign(list(want))
        for tp, off in want.items():
            consumer.seek(tp, off)
        deadline = time.monotonic() + timeout_s
        while want and time.monotonic() < deadline:
            polled = consumer.poll(timeout_ms=500)
            for tp, off in list(want.items()):
                if any(r.offset == off for r in polled.get(tp, ())):
                    return True
                if consumer.position(tp) > off:  # skipped: aborted records, then a marker
                    del want[tp]
        return False if not want else None
    finally:
        consumer.close()
