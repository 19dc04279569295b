"""Framing and produce parsing on byte sequences captured from kafka-python 3.0.12's own
encoder (``ProduceRequest(...).encode(header=True, framed=True)``), split every way."""

from __future__ import annotations

import struct

import pytest

from verifier.harness.kafka_wire import (
    FrameBuffer,
    WireError,
    decode_request_header,
    produce_acks,
    response_correlation_id,
)

#: (api version, acks, framed request) with correlation id 7 and client id "cap"
CAPTURED_PRODUCE = [
    (3, 0, "0000001900000003000000070003636170ffff0000000003e800000000"),
    (7, 1, "0000001900000007000000070003636170ffff0001000003e800000000"),
    (9, -1, "0000001b00000009000000070003636170000574782d31ffff000003e80100"),
    (12, 0, "000000170000000c00000007000363617000000000000003e80100"),
]
CAPTURED_METADATA_V12 = "000000120003000c0000000800036361700000000000"


@pytest.mark.parametrize(("version", "acks", "hexdata"), CAPTURED_PRODUCE)
def test_captured_produce_header_and_acks(version, acks, hexdata):
    (payload,) = FrameBuffer().feed(bytes.fromhex(hexdata))
    header = decode_request_header(payload)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        0, version, 7, "cap")
    assert produce_acks(payload) == acks


def test_stream_of_captured_frames_split_at_every_byte():
    stream = b"".join(bytes.fromhex(h) for _, _, h in CAPTURED_PRODUCE)
    stream += bytes.fromhex(CAPTURED_METADATA_V12)
    for cut in range(1, len(stream)):
        buf = FrameBuffer()
        frames = buf.feed(stream[:cut]) + buf.feed(stream[cut:])
        assert [decode_request_header(f).correlation_id for f in frames] == [7, 7, 7, 7, 8]
        assert buf.pending == 0


def test_metadata_is_not_produce():
    (payload,) = FrameBuffer().feed(bytes.fromhex(CAPTURED_METADATA_V12))
    assert decode_request_header(payload).api_key == 3
    with pytest.raises(WireError):
        produce_acks(payload)


def test_truncated_produce_body_is_malformed():
    (payload,) = FrameBuffer().feed(bytes.fromhex(CAPTURED_PRODUCE[2][2]))
    with pytest.raises(WireError):
        produce_acks(payload[:18])  # stops inside the transactional id


def test_oversized_frame_after_a_good_one():
    good = bytes.fromhex(CAPTURED_PRODUCE[0][2])
    buf = FrameBuffer(max_frame=1024)
    with pytest.raises(WireError, match="outside"):
        buf.feed(good + struct.pack(">i", 1025) + b"x" * 10)


def test_garbage_client_id_length():
    payload = struct.pack(">hhih", 0, 9, 1, 500) + b"short"
    with pytest.raises(WireError, match="client id"):
        decode_request_header(payload)


def test_response_correlation():
    assert response_correlation_id(struct.pack(">i", 7) + b"\x00") == 7
