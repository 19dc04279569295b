"""Waiting, in the fault proxy, for a transaction marker to land in a partition's log.

A hold rule with ``after_marker`` releases its request only once the partition it writes
(a TxnOffsetCommit: its group's ``__consumer_offsets`` partition) holds the marker
(``abort``, ``commit`` or ``any``) that ended the held request's own transaction:
KAFKA-14402 needs the late Produce after the coordinator's abort marker, which the
coordinator writes to the partition leader after it has answered EndTxn, between brokers,
where the proxy sees nothing. So the proxy asks the leader itself, directly on its
listener: when it holds the first request of a partition, the partition's high watermark
(every marker of that transaction comes after it; for a copy, whose original goes on at
once, read before the original is forwarded); after the rule's ``release_on`` event,
a Fetch from there, long-polling, until a control batch of the held request's producer id
and epoch of that type shows (its offset is the event's evidence). The wait is for the
marker itself, not for a time: the rule's ``release_after_ms`` stays the bound.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.harness.kafka_wire import (
    MAX_FRAME,
    BatchHeader,
    RequestIdentity,
    WireError,
    ask,
    fetch_request,
    frame,
    list_offsets_request,
    metadata_partitions,
    parse_fetch,
    parse_list_offsets,
)

log = logging.getLogger(__name__)

CLIENT_ID = "verifier-proxy-marker-probe"
#: how long one Fetch waits at the broker for a byte past its offset (a long poll: the
#: broker answers at once when the marker lands)
FETCH_WAIT_MS = 500
#: after an error (the leader moved, the broker restarts): ask again after this long
RETRY_S = 0.2
#: a broker that does not answer one request within this long is asked again
REQUEST_TIMEOUT_S = 10.0
#: errors after which the leader is looked up again (NOT_LEADER_OR_FOLLOWER, ...)
LEADER_ERRORS = {3, 6, 9, 74, 75}

OFFSETS_TOPIC = "__consumer_offsets"

Upstream = Callable[[int], tuple[str, int]]


def group_partition(group: str, partitions: int) -> int:
    """A group's ``__consumer_offsets`` partition, as the group coordinator computes it:
    ``Utils.abs(groupId.hashCode()) % partitions`` (offsets.topic.num.partitions), where
    ``hashCode`` is Java's over UTF-16 code units in 32-bit arithmetic and ``Utils.abs``
    is ``Math.abs`` with ``Integer.MIN_VALUE`` taken as 0 (not ``& 0x7fffffff``, the
    producer partitioner's ``toPositive``: the two differ for every negative hash)."""
    data = group.encode("utf-16-be")  # Java's chars: UTF-16 code units
    h = 0
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


#: what a request to a broker can end in besides an answer (TimeoutError is an OSError)
_PROBLEMS = (OSError, asyncio.IncompleteReadError, WireError)


@dataclass
class _Watch:
    """One partition of one rule: the offset it starts from and the waits on it."""

    topic: str
    partition: int
    broker: int
    start: asyncio.Future | None = None
    #: (producer id, epoch, kind) -> the task looking for that marker
    waits: dict[tuple, asyncio.Task] = field(default_factory=dict)


class MarkerProbe:
    """The proxy's marker waits, per rule and partition. ``upstream(broker)`` is the
    broker's own listener (host, port); ``brokers`` every broker id the proxy routes."""

    def __init__(self, upstream: Upstream, brokers: list[int]) -> None:
        self.upstream, self.brokers = upstream, list(brokers)
        self._watches: dict[tuple[int, str, int], _Watch] = {}
        self._corr = itertools.count(1)
        #: offsets.topic.num.partitions, from the first group's lookup
        self._offsets_partitions: int | None = None

    def where(self, request: RequestIdentity, partition: int | None, topic: str | None,
              broker: int) -> tuple[str, int] | None:
        """The partition a held request's marker is looked for in: a TxnOffsetCommit's
        group's ``__consumer_offsets`` partition (the coordinator writes the transaction's
        marker there: KAFKA-15449), else :meth:`partition_of`."""
        if request.group_id is None:
            return self.partition_of(request, partition, topic)
        if self._offsets_partitions is None:  # asked once, of the group's coordinator
            host, port = self.upstream(broker)
            try:
                infos = metadata_partitions(host, port, [OFFSETS_TOPIC])
            except (OSError, WireError) as exc:
                log.warning("marker probe: %s partitions: %s", OFFSETS_TOPIC, exc)
                return None
            self._offsets_partitions = len(infos) or None
        if self._offsets_partitions is None:
            return None
        return OFFSETS_TOPIC, group_partition(request.group_id, self._offsets_partitions)

    @staticmethod
    def partition_of(request: RequestIdentity, partition: int | None,
                     topic: str | None) -> tuple[str, int] | None:
        """The partition of a held request the marker is looked for in: the rule's
        partition (and topic) if it names one, else the request's first."""
        for p in request.partitions:
            if (partition is None or p.partition == partition) and \
                    (topic is None or p.topic == topic):
                return p.topic, p.partition
        return None

    def note_hold(self, rule_id: int, broker: int, where: tuple[str, int],
                  now: bool = False) -> None:
        """A request writing ``where`` was held on ``broker`` (its leader then): read the
        partition's high watermark now, before its transaction can have ended. ``now``: a
        copy was held and its original goes on at once, so its transaction may end within
        milliseconds: asked before the original is forwarded (blocking, one round trip on
        loopback), else by a task."""
        key = (rule_id, *where)
        if key in self._watches:
            return
        watch = _Watch(where[0], where[1], broker)
        loop = asyncio.get_running_loop()
        offset = self._high_watermark_now(watch) if now else None
        if offset is not None:
            watch.start = loop.create_future()
            watch.start.set_result(offset)
        else:
            watch.start = loop.create_task(self._high_watermark(watch))
        self._watches[key] = watch

    def wait(self, rule_id: int, broker: int, where: tuple[str, int], producer_id: int,
             producer_epoch: int, kind: str) -> asyncio.Task:
        """A task that ends with the marker (a :class:`BatchHeader` and the offset the
        search started from) of ``kind`` of that producer id and epoch in ``where``."""
        key = (rule_id, *where)
        watch = self._watches.get(key)
        if watch is None:  # no hold noted it first: search from the log's start
            watch = self._watches[key] = _Watch(where[0], where[1], broker)
        wkey = (producer_id, producer_epoch, kind)
        task = watch.waits.get(wkey)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._find(watch, *wkey))
            watch.waits[wkey] = task
        return task

    def cancel(self, rule_id: int) -> None:
        for key in [k for k in self._watches if k[0] == rule_id]:
            watch = self._watches.pop(key)
            for task in (watch.start, *watch.waits.values()):
                if task is not None:
                    task.cancel()

    def close(self) -> None:
        for rule_id in {k[0] for k in self._watches}:
            self.cancel(rule_id)

    # ----- the requests ------------------------------------------------------------------

    async def _ask(self, broker: int, payload: bytes, timeout: float) -> bytes:
        host, port = self.upstream(broker)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        try:
            writer.write(frame(payload))
            await writer.drain()
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4),
                                                               timeout))[0]
            if not 4 <= size <= MAX_FRAME:
                raise WireError(f"response size {size}")
            return await asyncio.wait_for(reader.readexactly(size), timeout)
        finally:
            writer.close()

    def _high_watermark_now(self, watch: _Watch) -> int | None:
        """The partition's high watermark, asked once and waited for (None: not known)."""
        host, port = self.upstream(watch.broker)
        payload = list_offsets_request(next(self._corr), CLIENT_ID, watch.topic,
                                       watch.partition)
        try:
            error, offset = parse_list_offsets(ask(host, port, payload, REQUEST_TIMEOUT_S),
                                               watch.topic, watch.partition)
        except (OSError, WireError) as exc:
            log.info("marker probe: ListOffsets %s-%s: %s", watch.topic, watch.partition, exc)
            return None
        return offset if error == 0 else None

    async def _leader(self, watch: _Watch) -> None:
        """Look the partition's leader up again (after an error that says it moved)."""
        for broker in self.brokers:
            host, port = self.upstream(broker)
            try:
                infos = await asyncio.to_thread(metadata_partitions, host, port, [watch.topic])
            except (OSError, WireError):
                continue
            for info in infos:
                if info.partition == watch.partition and info.leader in self.brokers:
                    watch.broker = info.leader
                    return

    async def _high_watermark(self, watch: _Watch) -> int:
        """The partition's high watermark, asked until a broker answers it."""
        while True:
            try:
                payload = list_offsets_request(next(self._corr), CLIENT_ID, watch.topic,
                                               watch.partition)
                error, offset = parse_list_offsets(
                    await self._ask(watch.broker, payload, REQUEST_TIMEOUT_S),
                    watch.topic, watch.partition)
                if error == 0:
                    return offset
                log.info("marker probe: ListOffsets %s-%s: error %s", watch.topic,
                         watch.partition, error)
            except _PROBLEMS as exc:
                log.info("marker probe: ListOffsets %s-%s: %s", watch.topic, watch.partition,
                         exc)
            await self._leader(watch)
            await asyncio.sleep(RETRY_S)

    async def _find(self, watch: _Watch, producer_id: int, producer_epoch: int,
                    kind: str) -> tuple[BatchHeader, int]:
        start = 0 if watch.start is None else await watch.start
        offset = start
        while True:
            try:
                payload = fetch_request(next(self._corr), CLIENT_ID, watch.topic,
                                        watch.partition, offset, FETCH_WAIT_MS)
                got = parse_fetch(await self._ask(watch.broker, payload,
                                                  REQUEST_TIMEOUT_S + FETCH_WAIT_MS / 1000),
                                  watch.topic, watch.partition)
            except _PROBLEMS as exc:
                log.info("marker probe: Fetch %s-%s at %s: %s", watch.topic, watch.partition,
                         offset, exc)
                await self._leader(watch)
                await asyncio.sleep(RETRY_S)
                continue
            if got.error_code != 0:
                log.info("marker probe: Fetch %s-%s at %s: error %s", watch.topic,
                         watch.partition, offset, got.error_code)
                if got.error_code in LEADER_ERRORS:
                    await self._leader(watch)
                await asyncio.sleep(RETRY_S)
                continue
            for batch in got.batches:
                if batch.marker is not None and batch.last_offset >= start and \
                        batch.producer_id == producer_id and \
                        batch.producer_epoch == producer_epoch and \
                        kind in ("any", batch.marker):
                    return batch, start
            offset = got.next_offset if got.next_offset is not None else offset
