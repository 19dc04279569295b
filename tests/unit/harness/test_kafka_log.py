"""Reading a partition's log over the wire (verifier.harness.kafka_wire.log): the requests the
fault proxy's marker probe sends, and the batch headers it reads from the answers, on
hand-built frames (a control batch as Kafka writes a transaction marker: attributes
transactional + control, one record whose key is version 0 and the marker type)."""

from __future__ import annotations

import struct

import pytest

from verifier.harness.kafka_wire import (
    WireError,
    decode_request_header,
    fetch_request,
    list_offsets_request,
    parse_fetch,
    parse_list_offsets,
    record_batches,
)

_BATCH = struct.Struct(">qiibihiqqqhii")


def _zigzag(n: int) -> bytes:
    raw, out = (n << 1) ^ (n >> 63), b""
    while True:
        byte = raw & 0x7F
        raw >>= 7
        if raw:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def _record(key: bytes, value: bytes, offset_delta: int = 0) -> bytes:
    body = (b"\x00" + _zigzag(0) + _zigzag(offset_delta) + _zigzag(len(key)) + key
            + _zigzag(len(value)) + value + _zigzag(0))
    return _zigzag(len(body)) + body


def batch(offset: int, pid: int, epoch: int, *, marker: int | None = None,
          records: int = 1) -> bytes:
    """A magic-2 batch: a transaction marker (``marker`` 0 abort, 1 commit) or ``records``
    transactional data records."""
    if marker is not None:
        recs = _record(struct.pack(">hh", 0, marker), struct.pack(">hi", 0, 7))
        attributes, count = 0x30, 1
    else:
        recs = b"".join(_record(b"k", b"v" * 20, i) for i in range(records))
        attributes, count = 0x10, records
    head = _BATCH.pack(offset, _BATCH.size - 12 + len(recs), 0, 2, 0, attributes, count - 1,
                       1000, 1000, pid, epoch, -1 if marker is not None else 0, count)
    return head + recs


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def fetch_response(topic: str, partition: int, records: bytes, error: int = 0,
                   high_watermark: int = 0) -> bytes:
    """A Fetch v4 response payload (correlation id first) of one partition."""
    return (struct.pack(">ii", 9, 0) + struct.pack(">i", 1) + _string(topic)
            + struct.pack(">i", 1) + struct.pack(">ihqq", partition, error, high_watermark,
                                                 high_watermark)
            + struct.pack(">i", -1) + struct.pack(">i", len(records)) + records)


def list_offsets_response(topic: str, partition: int, offset: int, error: int = 0) -> bytes:
    return (struct.pack(">i", 9) + struct.pack(">i", 1) + _string(topic)
            + struct.pack(">i", 1) + struct.pack(">ihqq", partition, error, -1, offset))


def test_requests_carry_their_api_version_and_partition():
    fetch = fetch_request(5, "probe", "t", 0, 38, 500)
    h = decode_request_header(fetch)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (1, 4, 5, "probe")
    assert fetch.endswith(struct.pack(">iqi", 0, 38, 1 << 20))  # partition, offset, max
    lo = list_offsets_request(6, "probe", "t", 2)
    h = decode_request_header(lo)
    assert (h.api_key, h.api_version) == (2, 1)
    assert lo.endswith(struct.pack(">iq", 2, -1))  # partition 2, the latest offset


def test_data_then_abort_marker():
    records = batch(36, 0, 0, records=2) + batch(38, 0, 0, marker=0)
    got = parse_fetch(fetch_response("t", 0, records, high_watermark=39), "t", 0)
    assert got.error_code == 0 and got.high_watermark == 39
    data, marker = got.batches
    assert (data.base_offset, data.last_offset, data.marker, data.transactional) == \
        (36, 37, None, True)
    assert (marker.base_offset, marker.producer_id, marker.producer_epoch, marker.marker) == \
        (38, 0, 0, "abort")
    assert got.next_offset == 39


def test_commit_marker_and_a_batch_cut_off_by_the_size_limit():
    whole = batch(10, 4, 2, marker=1)
    cut = batch(11, 4, 2, records=3)[:40]
    (only,) = record_batches(whole + cut)
    assert only.marker == "commit" and (only.producer_id, only.producer_epoch) == (4, 2)


def test_empty_answer_and_errors():
    got = parse_fetch(fetch_response("t", 0, b"", error=6), "t", 0)
    assert got.error_code == 6 and got.batches == () and got.next_offset is None
    with pytest.raises(WireError, match="does not name"):
        parse_fetch(fetch_response("t", 1, b""), "t", 0)
    with pytest.raises(WireError):
        parse_fetch(fetch_response("t", 0, b"")[:20], "t", 0)


def test_list_offsets():
    assert parse_list_offsets(list_offsets_response("t", 0, 120), "t", 0) == (0, 120)
    assert parse_list_offsets(list_offsets_response("t", 0, -1, 6), "t", 0) == (6, -1)
