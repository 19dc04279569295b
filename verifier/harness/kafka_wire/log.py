"""Reading one partition's log over the wire: what the fault proxy asks a broker itself to
see a transaction marker land (markers travel between brokers, so no client request or
response passing the proxy shows them).

Two requests, at versions every KRaft broker from 3.3 to 4.x serves (KIP-896 removed only
older ones): ListOffsets v1 (the partition's high watermark) and Fetch v4
(read_uncommitted, record batches of magic 2), kafka-python's messages both. Of the
fetched records only the batch headers are read (``kafka.record``): offsets, producer id
and epoch, the transactional and control flags, and for a control batch its marker type
(its control record's type: ABORT 0, COMMIT 1). Pure encoders and parsers; the I/O is in
verifier.harness.faults.marker_probe.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from verifier.harness.kafka_wire.frames import (
    DECODE_ERRORS,
    WireError,
    decode_response,
    encode_request,
)

FETCH_VERSION = 4
LIST_OFFSETS_VERSION = 1
#: ListOffsets' timestamp for "the latest offset" (for a consumer: the high watermark)
LATEST = -1
#: a consumer's replica id in Fetch and ListOffsets
CONSUMER = -1
MARKER_TYPES = {0: "abort", 1: "commit"}


@dataclass(frozen=True)
class BatchHeader:
    """One record batch of a fetched log: where it is and who wrote it."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    #: "abort" or "commit" for a control batch (a transaction marker); None otherwise
    marker: str | None

    def to_json(self) -> dict:
        """The batch as the hold events record it."""
        return {"offset": self.base_offset, "last_offset": self.last_offset,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "transactional": self.transactional, "marker": self.marker}


@dataclass(frozen=True)
class FetchedPartition:
    error_code: int
    high_watermark: int
    batches: tuple[BatchHeader, ...]
    #: below the high watermark while a transaction is open in the partition
    last_stable_offset: int = -1

    @property
    def next_offset(self) -> int | None:
        """The offset after the last whole batch, None if there was none."""
        return self.batches[-1].last_offset + 1 if self.batches else None


def list_offsets_request(correlation_id: int, client_id: str, topic: str,
                         partition: int) -> bytes:
    """ListOffsets v1 for the latest offset of one partition (a request payload)."""
    v = LIST_OFFSETS_VERSION
    part = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        version=v, partition_index=partition, timestamp=LATEST)
    request = ListOffsetsRequest(version=v, replica_id=CONSUMER, topics=[
        ListOffsetsRequest.ListOffsetsTopic(version=v, name=topic, partitions=[part])])
    return encode_request(request, correlation_id, client_id)


def fetch_request(correlation_id: int, client_id: str, topic: str, partition: int,
                  offset: int, max_wait_ms: int, max_bytes: int = 1 << 20) -> bytes:
    """Fetch v4 of one partition from ``offset``, read_uncommitted (markers and the
    records of open transactions up to the high watermark). The broker answers once it
    has a byte past ``offset`` (min bytes 1) or after ``max_wait_ms``."""
    v = FETCH_VERSION
    part = FetchRequest.FetchTopic.FetchPartition(
        version=v, partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)
    request = FetchRequest(version=v, replica_id=CONSUMER, max_wait_ms=max_wait_ms,
                           min_bytes=1, max_bytes=max_bytes, isolation_level=0,
                           topics=[FetchRequest.FetchTopic(version=v, topic=topic,
                                                           partitions=[part])])
    return encode_request(request, correlation_id, client_id)


def parse_list_offsets(payload: bytes, topic: str, partition: int) -> tuple[int, int]:
    """(error code, offset) of ``topic``/``partition`` in a ListOffsets v1 response."""
    response = decode_response(ListOffsetsResponse, payload, LIST_OFFSETS_VERSION)
    for t in response.topics:
        for p in t.partitions:
            if t.name == topic and p.partition_index == partition:
                return p.error_code, p.offset
    raise WireError(f"the ListOffsets response does not name {topic}-{partition}")


def parse_fetch(payload: bytes, topic: str, partition: int) -> FetchedPartition:
    """The batches of ``topic``/``partition`` in a Fetch v4 response (a batch cut off by
    the size limit at the end is left out)."""
    response = decode_response(FetchResponse, payload, FETCH_VERSION)
    for t in response.responses:
        for p in t.partitions:
            if t.topic == topic and p.partition_index == partition:
                return FetchedPartition(p.error_code, p.high_watermark,
                                        record_batches(p.records or b""),
                                        p.last_stable_offset)
    raise WireError(f"the Fetch response does not name {topic}-{partition}")


def _marker(batch: DefaultRecordBatch) -> str | None:
    """A control batch's marker type, from its (first) control record."""
    if not batch.is_control_batch:
        return None
    kind = next(iter(batch)).type
    return MARKER_TYPES.get(kind, f"type {kind}")


def record_batches(records: bytes) -> tuple[BatchHeader, ...]:
    """The headers of the whole magic-2 batches in ``records``."""
    out = []
    try:
        for batch in MemoryRecords(records):
            if not isinstance(batch, DefaultRecordBatch):
                raise WireError(f"record batch at offset {batch.base_offset} has magic "
                                f"{batch.magic}, not 2")
            out.append(BatchHeader(batch.base_offset, batch.last_offset, batch.producer_id,
                                   batch.producer_epoch, batch.is_transactional,
                                   _marker(batch)))
    except DECODE_ERRORS as exc:
        raise WireError(f"record batch: {exc!r}") from exc
    return tuple(out)
