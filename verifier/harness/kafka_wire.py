"""The little of Kafka's wire protocol this project speaks itself.

Frames are ``int32 size`` + payload. A request payload starts with the header
``int16 api_key, int16 api_version, int32 correlation_id, string client_id``; a response
payload starts with ``int32 correlation_id``. Responses on one connection come back in
request order.

Used by the cluster manager to ask one broker, directly on its own listener, which
brokers it knows (readiness that does not depend on the advertised, possibly proxied,
addresses), and by the fault proxy to parse headers.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

API_PRODUCE = 0
API_METADATA = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")

#: a frame larger than this is treated as garbage (Kafka's socket.request.max.bytes
#: default is 100 MiB)
MAX_FRAME = 100 * 1024 * 1024


class WireError(Exception):
    """Bytes that are not a well-formed Kafka frame."""


def frame(payload: bytes) -> bytes:
    return _INT32.pack(len(payload)) + payload


def encode_string(value: str | None) -> bytes:
    if value is None:
        return _INT16.pack(-1)
    data = value.encode()
    return _INT16.pack(len(data)) + data


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def encode_request_header(header: RequestHeader) -> bytes:
    return _HEADER.pack(header.api_key, header.api_version, header.correlation_id) + (
        encode_string(header.client_id)
    )


def decode_request_header(payload: bytes) -> RequestHeader:
    """Parse the non-flexible part of a request header (v1/v2 share it)."""
    if len(payload) < _HEADER.size + 2:
        raise WireError(f"request of {len(payload)} bytes is shorter than a header")
    api_key, api_version, corr = _HEADER.unpack_from(payload, 0)
    (n,) = _INT16.unpack_from(payload, _HEADER.size)
    start = _HEADER.size + 2
    if n < -1 or start + max(n, 0) > len(payload):
        raise WireError(f"bad client id length {n}")
    client_id = None if n == -1 else payload[start : start + n].decode("utf-8", "replace")
    return RequestHeader(api_key, api_version, corr, client_id)


#: Produce became "flexible" (compact strings, tagged fields, request header v2) at v9.
PRODUCE_FLEXIBLE_VERSION = 9


def _read_uvarint(payload: bytes, pos: int) -> tuple[int, int]:
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


def _skip_tagged_fields(payload: bytes, pos: int) -> int:
    count, pos = _read_uvarint(payload, pos)
    for _ in range(count):
        _, pos = _read_uvarint(payload, pos)  # tag
        size, pos = _read_uvarint(payload, pos)
        pos += size
    if pos > len(payload):
        raise WireError("tagged fields run past the end of the request")
    return pos


def produce_acks(payload: bytes) -> int:
    """The ``acks`` field of a Produce request payload (header included).

    The proxy needs it because an ``acks=0`` request gets no response at all, so it
    must not wait for one when pairing responses with requests.
    """
    header = decode_request_header(payload)
    if header.api_key != API_PRODUCE:
        raise WireError(f"api key {header.api_key} is not Produce")
    (id_len,) = _INT16.unpack_from(payload, _HEADER.size)
    pos = _HEADER.size + 2 + max(id_len, 0)  # past the client id (a plain string in v1/v2)
    if header.api_version >= PRODUCE_FLEXIBLE_VERSION:
        pos = _skip_tagged_fields(payload, pos)  # request header v2
        n, pos = _read_uvarint(payload, pos)  # compact nullable transactional id: len + 1
        pos += max(n - 1, 0)
    elif header.api_version >= 3:
        if pos + 2 > len(payload):
            raise WireError("produce request ends before its transactional id")
        (n,) = _INT16.unpack_from(payload, pos)
        pos += 2 + max(n, 0)
    if pos + 2 > len(payload):
        raise WireError("produce request ends before its acks field")
    return _INT16.unpack_from(payload, pos)[0]


def response_correlation_id(payload: bytes) -> int:
    if len(payload) < 4:
        raise WireError(f"response of {len(payload)} bytes has no correlation id")
    return _INT32.unpack_from(payload, 0)[0]


class FrameBuffer:
    """Accumulates bytes from a stream and yields whole frames (size prefix removed)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame

    def feed(self, data: bytes) -> list[bytes]:
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
class BrokerInfo:
    node_id: int
    host: str
    port: int


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        data.extend(chunk)
    return bytes(data)


API_API_VERSIONS = 18


def not_kafka(sock: socket.socket) -> str | None:
    """Ask for ApiVersions (v0, which every broker answers, before authentication too)
    on a connected socket. None when a Kafka response to it comes back; otherwise what
    did instead (the first bytes, or nothing before the socket's timeout)."""
    header = RequestHeader(API_API_VERSIONS, 0, 0x7E51, "verifier-probe")
    sock.sendall(frame(encode_request_header(header)))
    got = b""
    try:
        while len(got) < 8:
            chunk = sock.recv(8 - len(got))
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        return f"it replied {got!r}" if got else "no reply to an ApiVersions request"
    if len(got) == 8:
        size, correlation = struct.unpack(">ii", got)
        if correlation == header.correlation_id and 4 <= size <= MAX_FRAME:
            return None
        try:  # a little more of what answered, to name it
            sock.settimeout(0.5)
            got += sock.recv(32)
        except OSError:
            pass
    return f"it replied {got!r}" if got else "it closed the connection"


def _parse_metadata_v1_brokers(payload: bytes) -> list[BrokerInfo]:
    pos = 4  # correlation id
    (count,) = _INT32.unpack_from(payload, pos)
    pos += 4
    brokers = []
    for _ in range(count):
        (node_id,) = _INT32.unpack_from(payload, pos)
        pos += 4
        (hlen,) = _INT16.unpack_from(payload, pos)
        pos += 2
        host = payload[pos : pos + hlen].decode()
        pos += hlen
        (port,) = _INT32.unpack_from(payload, pos)
        pos += 4
        (rlen,) = _INT16.unpack_from(payload, pos)
        pos += 2 + max(rlen, 0)
        brokers.append(BrokerInfo(node_id, host, port))
    return brokers


def metadata_brokers(host: str, port: int, timeout: float = 3.0) -> list[BrokerInfo]:
    """Ask the broker at host:port (directly, no proxy) which brokers are alive.

    Uses Metadata v1 with an empty topic list; Kafka 4.x still serves v0+ of Metadata
    (KIP-896 kept it for old clients).
    """
    header = RequestHeader(API_METADATA, 1, 1, "verifier-readiness")
    # topics: empty array (0) = no topics; we only want the broker list
    payload = encode_request_header(header) + _INT32.pack(0)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(frame(payload))
        (size,) = _INT32.unpack(_read_exact(sock, 4))
        if size < 4 or size > MAX_FRAME:
            raise WireError(f"metadata response size {size}")
        body = _read_exact(sock, size)
    return _parse_metadata_v1_brokers(body)


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def _parse_metadata_v1_partitions(payload: bytes) -> list[PartitionInfo]:
    pos = 4  # correlation id
    (count,) = _INT32.unpack_from(payload, pos)
    pos += 4
    for _ in range(count):  # brokers: node id, host, port, rack
        (hlen,) = _INT16.unpack_from(payload, pos + 4)
        pos += 4 + 2 + hlen + 4
        (rlen,) = _INT16.unpack_from(payload, pos)
        pos += 2 + max(rlen, 0)
    pos += 4  # controller id
    (ntopics,) = _INT32.unpack_from(payload, pos)
    pos += 4
    out = []
    for _ in range(ntopics):
        (nlen,) = _INT16.unpack_from(payload, pos + 2)  # after the topic error code
        topic = payload[pos + 4 : pos + 4 + nlen].decode()
        pos += 4 + nlen + 1  # + is_internal
        (nparts,) = _INT32.unpack_from(payload, pos)
        pos += 4
        for _ in range(nparts):
            _, part, leader = struct.unpack_from(">hii", payload, pos)
            pos += 10
            arrays = []
            for _ in range(2):  # replicas, isr
                (n,) = _INT32.unpack_from(payload, pos)
                arrays.append(struct.unpack_from(f">{n}i", payload, pos + 4))
                pos += 4 + 4 * n
            out.append(PartitionInfo(topic, part, leader, tuple(sorted(arrays[0])),
                                     tuple(sorted(arrays[1]))))
    return out


def metadata_partitions(host: str, port: int, topics: list[str],
                        timeout: float = 3.0) -> list[PartitionInfo]:
    """Leader, replicas and ISR of ``topics`` as the broker at host:port sees them.

    Asks that one broker (a client library would pick any broker), so a test can read
    the view of the majority side of a network partition.
    """
    header = RequestHeader(API_METADATA, 1, 1, "verifier-metadata")
    body = _INT32.pack(len(topics)) + b"".join(encode_string(t) for t in topics)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(frame(encode_request_header(header) + body))
        (size,) = _INT32.unpack(_read_exact(sock, 4))
        if size < 4 or size > MAX_FRAME:
            raise WireError(f"metadata response size {size}")
        return _parse_metadata_v1_partitions(_read_exact(sock, size))


# ----- request identity: what the hold fault matches and the nemesis history records ----

API_INIT_PRODUCER_ID = 22
API_ADD_PARTITIONS_TO_TXN = 24
API_ADD_OFFSETS_TO_TXN = 25
API_END_TXN = 26
API_TXN_OFFSET_COMMIT = 28
#: the coordinator's transaction markers to a partition leader (broker to broker)
API_WRITE_TXN_MARKERS = 27

API_NAMES = {API_PRODUCE: "Produce", 1: "Fetch", API_METADATA: "Metadata", 10: "FindCoordinator",
             API_INIT_PRODUCER_ID: "InitProducerId",
             API_ADD_PARTITIONS_TO_TXN: "AddPartitionsToTxn",
             API_ADD_OFFSETS_TO_TXN: "AddOffsetsToTxn", API_END_TXN: "EndTxn",
             API_TXN_OFFSET_COMMIT: "TxnOffsetCommit", 18: "ApiVersions",
             API_WRITE_TXN_MARKERS: "WriteTxnMarkers"}
#: the first flexible version (compact strings, tagged fields, header v2) of each API
#: whose body this module reads
FLEXIBLE_FROM = {API_PRODUCE: 9, API_INIT_PRODUCER_ID: 2, API_ADD_PARTITIONS_TO_TXN: 3,
                 API_ADD_OFFSETS_TO_TXN: 3, API_END_TXN: 3, API_TXN_OFFSET_COMMIT: 3,
                 API_WRITE_TXN_MARKERS: 1}
#: APIs whose request starts with the transactional id (Produce: from v3)
_TXN_FIRST = (API_INIT_PRODUCER_ID, API_ADD_OFFSETS_TO_TXN, API_END_TXN, API_TXN_OFFSET_COMMIT)
#: a v2 record batch's header up to its record count (KIP-98)
_BATCH = struct.Struct(">qiibihiqqqhii")


class _Reader:
    """Reads Kafka's primitive types from a payload; flexible versions use compact
    (varint-prefixed) strings, arrays and bytes."""

    def __init__(self, payload: bytes, pos: int, flexible: bool) -> None:
        self.b, self.pos, self.flexible = payload, pos, flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.b):
            raise WireError(f"field of {n} bytes runs past the end ({len(self.b)} bytes)")
        out = self.b[self.pos : self.pos + n]
        self.pos += n
        return out

    def fixed(self, fmt: str) -> int:
        s = struct.Struct(">" + fmt)
        return s.unpack(self._take(s.size))[0]

    def uvarint(self) -> int:
        value, self.pos = _read_uvarint(self.b, self.pos)
        return value

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.fixed("h")
        return None if n < 0 else self._take(n).decode("utf-8", "replace")

    def array_len(self) -> int:
        return self.uvarint() - 1 if self.flexible else self.fixed("i")

    def blob(self) -> bytes | None:
        n = self.uvarint() - 1 if self.flexible else self.fixed("i")
        return None if n < 0 else self._take(n)

    def uuid(self) -> str:
        return self._take(16).hex()

    def tagged(self) -> None:
        if self.flexible:
            self.pos = _skip_tagged_fields(self.b, self.pos)


@dataclass(frozen=True)
class PartitionWrite:
    """One partition a request writes to or adds to a transaction; for Produce the first
    record batch's producer fields (magic 2), for Produce v13+ the topic as its id."""

    topic: str
    partition: int
    base_sequence: int | None = None
    records: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None


@dataclass(frozen=True)
class RequestIdentity:
    """Who sent a request and what it is about: the header, and for the transactional
    APIs the transactional id, producer id and epoch, and the partitions."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    transactional_id: str | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    #: EndTxn and WriteTxnMarkers: commit (True) or abort (False)
    committed: bool | None = None
    acks: int | None = None
    partitions: tuple[PartitionWrite, ...] = ()
    #: Produce: what its records say of their transaction, in the generators' record
    #: format (verifier.rundata.records: ``"abort":true`` when it is meant to abort);
    #: None when the values do not say (compressed, another writer's records);
    #: TxnOffsetCommit: what its offsets' metadata says (the copier writes it there)
    records_abort: bool | None = None
    #: TxnOffsetCommit: the consumer group (its ``__consumer_offsets`` partition)
    group_id: str | None = None

    @property
    def api_name(self) -> str:
        return API_NAMES.get(self.api_key, str(self.api_key))

    def to_json(self) -> dict:
        out = {"api": self.api_name, "api_key": self.api_key, "api_version": self.api_version,
               "correlation_id": self.correlation_id, "client_id": self.client_id}
        for name in ("transactional_id", "producer_id", "producer_epoch", "committed", "acks",
                     "records_abort", "group_id"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.partitions:
            out["partitions"] = [{k: v for k, v in p.__dict__.items() if v is not None}
                                 for p in self.partitions]
        return out


def _body_reader(payload: bytes, header: RequestHeader) -> _Reader:
    """A reader at the start of the request body (past header v1, or v2's tags)."""
    (n,) = _INT16.unpack_from(payload, _HEADER.size)
    flexible = header.api_version >= FLEXIBLE_FROM.get(header.api_key, 1 << 15)
    r = _Reader(payload, _HEADER.size + 2 + max(n, 0), flexible)
    r.tagged()  # request header v2
    return r


def _batch_fields(records: bytes | None) -> dict:
    if not records or len(records) < _BATCH.size or records[16] != 2:
        return {}
    f = _BATCH.unpack_from(records, 0)
    return {"producer_id": f[9], "producer_epoch": f[10], "base_sequence": f[11],
            "records": f[12]}


def records_abort(payload: bytes) -> bool | None:
    """Whether the uncompressed record values in a transactional Produce say their
    transaction is meant to abort (``"abort":true``, the generators' record format), or
    not (``"abort":false``); None when neither is there (compressed batches, other
    writers). One transaction's records all carry the same flag; so do the offsets'
    metadata of the copier's TxnOffsetCommit (producers.copier)."""
    if _ABORT_TRUE in payload:
        return True
    if _ABORT_FALSE in payload:
        return False
    return None


_ABORT_TRUE, _ABORT_FALSE = b'"abort":true', b'"abort":false'


def request_identity(payload: bytes) -> RequestIdentity:
    """Parse what identifies a request (a :class:`RequestIdentity`); APIs this module
    does not read get the header only. A body that does not parse is a WireError."""
    h = decode_request_header(payload)
    base = dict(api_key=h.api_key, api_version=h.api_version, correlation_id=h.correlation_id,
                client_id=h.client_id)
    if h.api_key not in FLEXIBLE_FROM:
        return RequestIdentity(**base)
    r = _body_reader(payload, h)
    if h.api_key == API_PRODUCE:
        txn = r.string() if h.api_version >= 3 else None
        acks = r.fixed("h")
        r.fixed("i")  # timeout
        parts = []
        for _ in range(r.array_len()):
            topic = r.uuid() if h.api_version >= 13 else (r.string() or "")
            for _ in range(r.array_len()):
                index = r.fixed("i")
                batch = _batch_fields(r.blob())
                r.tagged()
                parts.append(PartitionWrite(topic, index, **batch))
            r.tagged()
        pid = next((p.producer_id for p in parts if p.producer_id is not None), None)
        epoch = next((p.producer_epoch for p in parts if p.producer_epoch is not None), None)
        return RequestIdentity(**base, transactional_id=txn, producer_id=pid,
                               producer_epoch=epoch, acks=acks, partitions=tuple(parts),
                               records_abort=records_abort(payload) if txn else None)
    if h.api_key == API_ADD_PARTITIONS_TO_TXN:
        if h.api_version >= 4:  # batched (brokers' verification); the first transaction
            if r.array_len() < 1:
                return RequestIdentity(**base)
        txn, pid, epoch = r.string(), r.fixed("q"), r.fixed("h")
        if h.api_version >= 4:
            r.fixed("?")  # verify only
        parts = []
        for _ in range(r.array_len()):
            topic = r.string() or ""
            parts += [PartitionWrite(topic, r.fixed("i")) for _ in range(r.array_len())]
            r.tagged()
        return RequestIdentity(**base, transactional_id=txn, producer_id=pid,
                               producer_epoch=epoch, partitions=tuple(parts))
    if h.api_key == API_WRITE_TXN_MARKERS:
        return _write_txn_markers(r, base)
    txn = r.string()
    if h.api_key == API_END_TXN:
        pid, epoch, committed = r.fixed("q"), r.fixed("h"), bool(r.fixed("b"))
        return RequestIdentity(**base, transactional_id=txn, producer_id=pid,
                               producer_epoch=epoch, committed=committed)
    if h.api_key == API_ADD_OFFSETS_TO_TXN:
        return RequestIdentity(**base, transactional_id=txn, producer_id=r.fixed("q"),
                               producer_epoch=r.fixed("h"))
    if h.api_key == API_TXN_OFFSET_COMMIT:
        group = r.string()
        return RequestIdentity(**base, transactional_id=txn, group_id=group,
                               producer_id=r.fixed("q"), producer_epoch=r.fixed("h"),
                               records_abort=records_abort(payload))
    return RequestIdentity(**base, transactional_id=txn)  # InitProducerId


def _write_txn_markers(r: _Reader, base: dict) -> RequestIdentity:
    """WriteTxnMarkers (coordinator to leader): the first marker's producer id, epoch,
    result and partitions (the coordinator batches the markers it has for one leader;
    here one transactional producer writes at a time). v2 (KIP-1228) adds the marker's
    transaction version after the coordinator epoch."""
    if r.array_len() < 1:
        return RequestIdentity(**base)
    pid, epoch, committed = r.fixed("q"), r.fixed("h"), bool(r.fixed("b"))
    parts = []
    for _ in range(r.array_len()):
        topic = r.string() or ""
        parts += [PartitionWrite(topic, r.fixed("i")) for _ in range(r.array_len())]
        r.tagged()
    return RequestIdentity(**base, producer_id=pid, producer_epoch=epoch, committed=committed,
                           partitions=tuple(parts))


def response_error(summary: dict) -> int | None:
    """One error code for a response summary: its own, or for a Produce the first
    partition's that is not 0 (0 when all are); None when it says none."""
    if "error_code" in summary:
        return summary["error_code"]
    parts = summary.get("partitions")
    if not parts:
        return None
    return next((p[2] for p in parts if p[2]), 0)


def response_summary(payload: bytes, api_key: int, api_version: int) -> dict:
    """What a response says, for the APIs the hold fault follows: Produce, per partition
    ``[partition, error code, base offset]``; the transactional APIs, their error code
    (AddPartitionsToTxn v0-3, TxnOffsetCommit and WriteTxnMarkers: the first partition
    error that is not 0; WriteTxnMarkers also ``markers``, ``[topic, partition, error
    code]``). Others: {}."""
    if api_key not in FLEXIBLE_FROM:
        return {}
    r = _Reader(payload, 4, api_version >= FLEXIBLE_FROM[api_key])
    r.tagged()  # response header v1
    if api_key == API_WRITE_TXN_MARKERS:  # no throttle time
        results = []
        for _ in range(r.array_len()):
            r.fixed("q")  # producer id
            for _ in range(r.array_len()):
                topic = r.string() or ""
                for _ in range(r.array_len()):
                    results.append([topic, r.fixed("i"), r.fixed("h")])
                    r.tagged()
                r.tagged()
            r.tagged()
        return {"error_code": next((e for *_, e in results if e), 0), "markers": results}
    if api_key == API_PRODUCE:
        results = []
        for _ in range(r.array_len()):
            topic = r.uuid() if api_version >= 13 else (r.string() or "")
            for _ in range(r.array_len()):
                index, error, offset = r.fixed("i"), r.fixed("h"), r.fixed("q")
                results.append([topic, index, error, offset])
                if api_version >= 2:
                    r.fixed("q")  # log append time
                if api_version >= 5:
                    r.fixed("q")  # log start offset
                if api_version >= 8:
                    for _ in range(r.array_len()):  # record errors
                        r.fixed("i")
                        r.string()
                        r.tagged()
                    r.string()  # error message
                r.tagged()  # (current leader, v10+, is a tagged field)
            r.tagged()
        return {"partitions": results}
    r.fixed("i")  # throttle time
    # AddPartitionsToTxn v0-3 and TxnOffsetCommit answer per topic and partition
    if (api_key == API_ADD_PARTITIONS_TO_TXN and api_version < 4) or \
            api_key == API_TXN_OFFSET_COMMIT:
        for _ in range(r.array_len()):
            r.string()
            for _ in range(r.array_len()):
                r.fixed("i")
                error = r.fixed("h")
                if error:
                    return {"error_code": error}
                r.tagged()
            r.tagged()
        return {"error_code": 0}
    return {"error_code": r.fixed("h")}
