"""The framing of the record server (issue 46): how a generator that cannot call Python
(the Java one) asks for a pipeline file's records, so one encoder
(verifier.rundata.record_encoding.encode_record, through producers.user_records.RecordMaker)
makes them for every client, with no bound on how many.

The server is a child of the generator (``python -m producers.user_records serve --plan
RUN/config.json --pid P``), speaking on its stdin and stdout; it ends at the end of its
stdin (the generator closed it or died). Every frame is its body's length (4 bytes,
unsigned) then the body; every integer big-endian (Java's ``DataInputStream``):

request body
    ``count`` (u32), then per record ``p`` (i32), ``seq`` (i64), the identity's length
    (u32) and the identity (the tool's record value, format 1: what the header and the
    ``ID_FIELD`` carry)
response body
    per record of the request, in its order, a status (u8): ``0`` then the key and the
    value (each i32 length, -1 for none, then the bytes), the timestamp (i64 ms, -1 for
    none: the producer's clock), the header count (u16) and each header's name (u16
    length, UTF-8) and value (i32 length, bytes), the identity header included; or ``1``
    then a message (u32 length, UTF-8): ``make_record`` failed for that record, which the
    generator writes as a send that failed before it left.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

from verifier.rundata.record_encoding import UserRecord

_U32 = struct.Struct(">I")
_ENTRY = struct.Struct(">iqI")  # p, seq, identity length
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
OK, ERROR = 0, 1
#: the largest frame read: a request is a batch of the generator's records (each its
#: partition, sequence and identity, tens of bytes); a length past this is a stream out
#: of step (or not the generator's), refused before its bytes are allocated
MAX_FRAME = 64 << 20


class FrameError(ValueError):
    """A frame that does not parse (a wrong length, a truncated field)."""


def frame(body: bytes) -> bytes:
    return _U32.pack(len(body)) + body


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next frame's body, or None at the end of the stream (between frames)."""
    head = stream.read(4)
    if not head:
        return None
    if len(head) < 4:
        raise FrameError(f"a frame's length cut short: {len(head)} of 4 bytes")
    (n,) = _U32.unpack(head)
    if n > MAX_FRAME:
        raise FrameError(f"a frame of {n} bytes, more than the {MAX_FRAME} a request can be: "
                         "the stream is out of step")
    body = stream.read(n)
    if len(body) < n:
        raise FrameError(f"a frame cut short: {len(body)} of {n} bytes")
    return body


def encode_request(items) -> bytes:
    """A framed request for ``(p, seq, identity)`` of each of ``items``."""
    parts = [_U32.pack(len(items))]
    for p, seq, identity in items:
        parts += [_ENTRY.pack(p, seq, len(identity)), identity]
    return frame(b"".join(parts))


def decode_request(body: bytes) -> list[tuple[int, int, bytes]]:
    r = _Reader(body)
    out = []
    for _ in range(r.unpack(_U32)):
        p, seq, n = r.unpack_all(_ENTRY)
        out.append((p, seq, r.take(n)))
    r.end()
    return out


def encode_response(results) -> bytes:
    """A framed response: each result a :class:`UserRecord` whose headers are all the
    record's (the identity's included), or a ``str``, why it could not be made."""
    parts: list[bytes] = []
    for rec in results:
        if isinstance(rec, str):
            msg = rec.encode()
            parts += [bytes([ERROR]), _U32.pack(len(msg)), msg]
            continue
        parts += [bytes([OK]), *_optional(rec.key), *_optional(rec.value),
                  _I64.pack(-1 if rec.timestamp_ms is None else rec.timestamp_ms),
                  _U16.pack(len(rec.headers))]
        for name, value in rec.headers:
            raw = name.encode()
            parts += [_U16.pack(len(raw)), raw, _I32.pack(len(value)), value]
    return frame(b"".join(parts))


def decode_response(body: bytes, count: int) -> list[UserRecord | str]:
    """The ``count`` results of a response body (the Java side's reading, in Python)."""
    r = _Reader(body)
    out: list[UserRecord | str] = []
    for _ in range(count):
        status = r.take(1)[0]
        if status == ERROR:
            out.append(r.take(r.unpack(_U32)).decode())
            continue
        if status != OK:
            raise FrameError(f"unknown status {status}")
        key, value = r.optional(), r.optional()
        ts = r.unpack(_I64)
        headers = []
        for _ in range(r.unpack(_U16)):
            name = r.take(r.unpack(_U16)).decode()
            headers.append((name, r.take(r.unpack(_I32))))
        out.append(UserRecord(key, value, tuple(headers), None if ts < 0 else ts))
    r.end()
    return out


def _optional(b: bytes | None) -> list[bytes]:
    return [_I32.pack(-1)] if b is None else [_I32.pack(len(b)), b]


class _Reader:
    def __init__(self, body: bytes) -> None:
        self.body, self.at = body, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.body):
            raise FrameError(f"a field of {n} bytes past the frame's end (at {self.at} of "
                             f"{len(self.body)})")
        out = self.body[self.at:self.at + n]
        self.at += n
        return out

    def unpack_all(self, s: struct.Struct) -> tuple:
        return s.unpack(self.take(s.size))

    def unpack(self, s: struct.Struct) -> int:
        return self.unpack_all(s)[0]

    def optional(self) -> bytes | None:
        n = self.unpack(_I32)
        return None if n == -1 else self.take(n)

    def end(self) -> None:
        if self.at != len(self.body):
            raise FrameError(f"{len(self.body) - self.at} bytes left after the last field")


__all__ = ["FrameError", "decode_request", "decode_response", "encode_request",
           "encode_response", "frame", "read_frame"]
