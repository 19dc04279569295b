"""Kafka framing: whole frames out of arbitrary chunks, garbage rejected."""

from __future__ import annotations

import struct

import pytest

from verifier.harness.kafka_wire import (
    FrameBuffer,
    RequestHeader,
    WireError,
    decode_request_header,
    encode_request_header,
    frame,
    response_correlation_id,
)


def test_header_round_trip():
    h = RequestHeader(api_key=0, api_version=9, correlation_id=42, client_id="producer-1")
    payload = encode_request_header(h) + b"body"
    assert decode_request_header(payload) == h


def test_null_client_id():
    h = RequestHeader(3, 1, 7, None)
    assert decode_request_header(encode_request_header(h)).client_id is None


def test_frames_split_across_reads():
    frames = [frame(b"a" * 10), frame(b""), frame(b"xyz")]
    stream = b"".join(frames)
    buf = FrameBuffer()
    out = []
    for i in range(len(stream)):  # one byte at a time
        out.extend(buf.feed(stream[i : i + 1]))
    assert out == [b"a" * 10, b"", b"xyz"]
    assert buf.pending == 0


def test_two_frames_in_one_read_and_a_partial_third():
    buf = FrameBuffer()
    out = buf.feed(frame(b"one") + frame(b"two") + frame(b"three")[:5])
    assert out == [b"one", b"two"]
    assert buf.pending == 5


@pytest.mark.parametrize("size", [-1, 2**31 - 1])
def test_oversized_or_negative_frame(size):
    with pytest.raises(WireError):
        FrameBuffer(max_frame=1024).feed(struct.pack(">i", size) + b"x")


def test_short_payloads_are_errors():
    with pytest.raises(WireError):
        decode_request_header(b"\x00\x01")
    with pytest.raises(WireError):
        response_correlation_id(b"\x00")
    assert response_correlation_id(struct.pack(">i", 99) + b"rest") == 99
