"""Reading one partition's log over Kafka's wire protocol: what the fault proxy asks a
broker itself to see a transaction marker land (markers travel between brokers, so no
client request or response passing the proxy shows them).

Two requests, at versions every KRaft broker from 3.3 to 4.x serves (KIP-896 removed only
older ones): ListOffsets v1 (the partition's high watermark) and Fetch v4
(read_uncommitted, record batches of magic 2). Of the fetched records only the batch
headers are read: offsets, producer id and epoch, the transactional and control flags,
and for a control batch its marker type (the first record's key: ABORT 0, COMMIT 1).
Pure encoders and parsers; the I/O is in verifier.harness.faults.marker_probe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from verifier.harness.kafka_wire import (
    RequestHeader,
    WireError,
    encode_request_header,
    encode_string,
)

API_FETCH = 1
API_LIST_OFFSETS = 2
FETCH_VERSION = 4
LIST_OFFSETS_VERSION = 1
#: ListOffsets' timestamp for "the latest offset" (for a consumer: the high watermark)
LATEST = -1
#: a v2 record batch's header up to its record count: base offset, batch length, leader
#: epoch, magic, crc, attributes, last offset delta, first and max timestamp, producer id,
#: producer epoch, base sequence, record count (KIP-98)
_BATCH = struct.Struct(">qiibihiqqqhii")
#: bytes before a batch's length field counts (base offset + the length itself)
_LOG_OVERHEAD = 12
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
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
        return {"offset": self.base_offset, "last_offset": self.last_offset,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "transactional": self.transactional, "marker": self.marker}


@dataclass(frozen=True)
class FetchedPartition:
    error_code: int
    high_watermark: int
    batches: tuple[BatchHeader, ...]

    @property
    def next_offset(self) -> int | None:
        """The offset after the last whole batch, None if there was none."""
        return self.batches[-1].last_offset + 1 if self.batches else None


def _partition_request(topic: str, partition: int, tail: bytes) -> bytes:
    """A one-topic, one-partition array as Fetch and ListOffsets requests carry it."""
    return (struct.pack(">i", 1) + encode_string(topic) + struct.pack(">i", 1)
            + struct.pack(">i", partition) + tail)


def list_offsets_request(correlation_id: int, client_id: str, topic: str,
                         partition: int) -> bytes:
    """ListOffsets v1 for the latest offset of one partition (a request payload)."""
    header = RequestHeader(API_LIST_OFFSETS, LIST_OFFSETS_VERSION, correlation_id, client_id)
    return (encode_request_header(header) + struct.pack(">i", -1)  # replica id: a consumer
            + _partition_request(topic, partition, struct.pack(">q", LATEST)))


def fetch_request(correlation_id: int, client_id: str, topic: str, partition: int,
                  offset: int, max_wait_ms: int, max_bytes: int = 1 << 20) -> bytes:
    """Fetch v4 of one partition from ``offset``, read_uncommitted (markers and the
    records of open transactions up to the high watermark). The broker answers once it
    has a byte past ``offset`` (min bytes 1) or after ``max_wait_ms``."""
    header = RequestHeader(API_FETCH, FETCH_VERSION, correlation_id, client_id)
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, max_bytes, 0)
    return (encode_request_header(header) + body
            + _partition_request(topic, partition, struct.pack(">qi", offset, max_bytes)))


class _Cursor:
    def __init__(self, payload: bytes, pos: int = 0) -> None:
        self.b, self.pos = payload, pos

    def take(self, fmt: str):
        s = struct.Struct(">" + fmt)
        if self.pos + s.size > len(self.b):
            raise WireError(f"response ends at {len(self.b)} bytes inside a field")
        out = s.unpack_from(self.b, self.pos)
        self.pos += s.size
        return out[0] if len(out) == 1 else out

    def string(self) -> str | None:
        n = self.take("h")
        if n < 0:
            return None
        out = self.b[self.pos:self.pos + n]
        if len(out) < n:
            raise WireError("a string runs past the end of the response")
        self.pos += n
        return out.decode("utf-8", "replace")

    def blob(self) -> bytes | None:
        n = self.take("i")
        if n < 0:
            return None
        if self.pos + n > len(self.b):
            raise WireError("a byte field runs past the end of the response")
        out = self.b[self.pos:self.pos + n]
        self.pos += n
        return out


def parse_list_offsets(payload: bytes, topic: str, partition: int) -> tuple[int, int]:
    """(error code, offset) of ``topic``/``partition`` in a ListOffsets v1 response."""
    c = _Cursor(payload, 4)  # past the correlation id
    for _ in range(c.take("i")):
        name = c.string()
        for _ in range(c.take("i")):
            index, error, _timestamp, offset = c.take("ihqq")
            if name == topic and index == partition:
                return error, offset
    raise WireError(f"the ListOffsets response does not name {topic}-{partition}")


def parse_fetch(payload: bytes, topic: str, partition: int) -> FetchedPartition:
    """The batches of ``topic``/``partition`` in a Fetch v4 response (a batch cut off by
    the size limit at the end is left out)."""
    c = _Cursor(payload, 4)
    c.take("i")  # throttle time
    for _ in range(c.take("i")):
        name = c.string()
        for _ in range(c.take("i")):
            index, error, high_watermark, _lso = c.take("ihqq")
            aborted = c.take("i")
            for _ in range(max(aborted, 0)):
                c.take("qq")
            records = c.blob()
            if name == topic and index == partition:
                return FetchedPartition(error, high_watermark, record_batches(records or b""))
    raise WireError(f"the Fetch response does not name {topic}-{partition}")


def record_batches(records: bytes) -> tuple[BatchHeader, ...]:
    """The headers of the whole magic-2 batches in ``records``."""
    out, pos = [], 0
    while pos + _LOG_OVERHEAD <= len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        end = pos + _LOG_OVERHEAD + length
        if length < _BATCH.size - _LOG_OVERHEAD or end > len(records):
            break  # the partial batch a fetch's size limit cut off
        f = _BATCH.unpack_from(records, pos)
        if f[3] != 2:
            raise WireError(f"record batch at offset {base} has magic {f[3]}, not 2")
        attributes = f[5]
        marker = None
        if attributes & CONTROL_FLAG:
            marker = _marker_type(records, pos + _BATCH.size, end)
        out.append(BatchHeader(base, base + f[6], f[9], f[10],
                               bool(attributes & TRANSACTIONAL_FLAG), marker))
        pos = end
    return tuple(out)


def _varint(b: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at ``pos``; returns (value, next position)."""
    raw = shift = 0
    while True:
        if pos >= len(b) or shift > 63:
            raise WireError("truncated or overlong varint in a control record")
        byte = b[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _marker_type(b: bytes, pos: int, end: int) -> str:
    """A control batch's marker type, from its first record's key (version, type)."""
    _, pos = _varint(b, pos)  # record length
    pos += 1  # record attributes
    _, pos = _varint(b, pos)  # timestamp delta
    _, pos = _varint(b, pos)  # offset delta
    key_len, pos = _varint(b, pos)
    if key_len < 4 or pos + 4 > end:
        raise WireError(f"control record key of {key_len} bytes")
    _version, kind = struct.unpack_from(">hh", b, pos)
    return MARKER_TYPES.get(kind, f"type {kind}")
