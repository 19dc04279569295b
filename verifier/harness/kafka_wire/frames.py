"""Frames and headers: how Kafka's requests and responses travel on a connection, and the
one place the codec hands bodies to kafka-python's messages.

A frame is ``int32 size`` + payload. A request payload starts with its header (``int16
api_key, int16 api_version, int32 correlation_id, string client_id``, and in header v2,
which an API's flexible versions use, tagged fields); a response payload starts with
``int32 correlation_id`` (header v1 adds tagged fields). Responses on one connection come
back in request order.
"""

from __future__ import annotations

import io
import socket
import struct
from dataclasses import dataclass

from kafka.errors import CorruptRecordError
from kafka.protocol.api_header import RequestHeader as _LibRequestHeader
from kafka.protocol.api_message import ApiMessage

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
#: bytes of a request header before its client id (api key, version, correlation id)
HEADER_SIZE = _HEADER.size

#: a frame larger than this is treated as garbage (Kafka's socket.request.max.bytes
#: default is 100 MiB)
MAX_FRAME = 100 * 1024 * 1024

#: what kafka-python's decoders raise on bytes that do not fit the schema: a short buffer
#: (struct.error, IndexError), a bad string or an unknown version (ValueError, which
#: UnicodeDecodeError is), a record batch that does not add up (CorruptRecordError)
DECODE_ERRORS = (struct.error, ValueError, IndexError, TypeError, CorruptRecordError)


class WireError(Exception):
    """Bytes that are not a well-formed Kafka frame."""


def frame(payload: bytes) -> bytes:
    """``payload`` with its size in front, as it goes on the wire."""
    return _INT32.pack(len(payload)) + payload


class FrameBuffer:
    """Accumulates bytes from a stream and yields whole frames (size prefix removed)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame

    def feed(self, data: bytes) -> list[bytes]:
        """The whole frames ``data`` completes, in order; a partial one stays buffered."""
        self._buf.extend(data)
        frames = []
        while len(self._buf) >= 4:
            (size,) = _INT32.unpack_from(self._buf, 0)
            if size < 0 or size > self._max:
                raise WireError(f"frame size {size} outside 0..{self._max}")
            if len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[4 : 4 + size]))
            del self._buf[: 4 + size]
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf)


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def decode_request_header(payload: bytes) -> RequestHeader:
    """The part every request header shares (v1 and v2 alike), read on every request the
    proxy forwards; by hand, see the package's docstring for why."""
    if len(payload) < _HEADER.size + 2:
        raise WireError(f"request of {len(payload)} bytes is shorter than a header")
    api_key, api_version, corr = _HEADER.unpack_from(payload, 0)
    (n,) = _INT16.unpack_from(payload, _HEADER.size)
    start = _HEADER.size + 2
    if n < -1 or start + max(n, 0) > len(payload):
        raise WireError(f"bad client id length {n}")
    client_id = None if n == -1 else payload[start : start + n].decode("utf-8", "replace")
    return RequestHeader(api_key, api_version, corr, client_id)


def encode_request_header(header: RequestHeader) -> bytes:
    """A request header v1 (kafka-python's encoder): what a request whose API has no
    schema in kafka-python, or an empty body, is sent with."""
    return _LibRequestHeader(request_api_key=header.api_key,
                             request_api_version=header.api_version,
                             correlation_id=header.correlation_id,
                             client_id=header.client_id).encode(flexible=False)


def response_correlation_id(payload: bytes) -> int:
    """The correlation id a response payload starts with (every response header's)."""
    if len(payload) < 4:
        raise WireError(f"response of {len(payload)} bytes has no correlation id")
    return _INT32.unpack_from(payload, 0)[0]


def encode_request(message: ApiMessage, correlation_id: int, client_id: str) -> bytes:
    """A request payload (header and body, no size) of a kafka-python request message
    whose version is set."""
    message.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(message.encode(header=True))


def read_uvarint(payload: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at ``pos``; returns (value, next position)."""
    value = shift = 0
    while True:
        if pos >= len(payload) or shift > 28:
            raise WireError("truncated or overlong varint")
        byte = payload[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def skip_tagged_fields(payload: bytes, pos: int) -> int:
    """Past the tagged fields at ``pos`` (a flexible version's count, then tag, size and
    bytes each); returns the next position."""
    count, pos = read_uvarint(payload, pos)
    for _ in range(count):
        _, pos = read_uvarint(payload, pos)  # tag
        size, pos = read_uvarint(payload, pos)
        pos += size
    return pos


def body_offset(cls: type[ApiMessage], payload: bytes, version: int) -> int:
    """Where a request's body starts after its header (v1, or v2 with its tagged fields,
    as ``cls`` says for ``version``)."""
    data = io.BytesIO(payload)
    try:
        cls.parse_header(data, version=min(version, cls.max_version))
    except DECODE_ERRORS as exc:
        raise WireError(f"{cls.__name__} v{version} header: {exc!r}") from exc
    return data.tell()


def _decode(cls: type[ApiMessage], payload: bytes, version: int) -> ApiMessage:
    """A message's body after its header (v1/v2 or v0/v1 as ``cls`` says for ``version``).

    A version above kafka-python's newest is read as its newest: a newer version's
    additions come as tagged fields or after what is read here (as the parser this
    replaced assumed). The header is read from a file view of the payload and the body
    from a memoryview: kafka-python's own ``decode(header=True)`` copies the whole payload
    first, a Produce's records included.
    """
    version = min(version, cls.max_version)
    try:
        data = io.BytesIO(payload)  # shares the bytes, no copy
        cls.parse_header(data, version=version)
        return cls.decode(memoryview(payload)[data.tell():], version=version)
    except DECODE_ERRORS as exc:
        raise WireError(f"{cls.__name__} v{version}: {exc!r}") from exc


def decode_request(cls: type[ApiMessage], payload: bytes, header: RequestHeader) -> ApiMessage:
    """The body of a request payload (``header`` is its decoded header) as ``cls``."""
    return _decode(cls, payload, header.api_version)


def decode_response(cls: type[ApiMessage], payload: bytes, version: int) -> ApiMessage:
    """The body of a response payload to a request of ``version`` as ``cls``."""
    return _decode(cls, payload, version)


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
        data.extend(chunk)
    return bytes(data)


def ask(host: str, port: int, payload: bytes, timeout: float) -> bytes:
    """Send one request payload to a broker on a connection of its own (blocking) and
    return the response payload."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(frame(payload))
        (size,) = _INT32.unpack(_read_exact(sock, 4))
        if size < 4 or size > MAX_FRAME:
            raise WireError(f"response size {size}")
        return _read_exact(sock, size)
