"""The transaction APIs through kafka-python's messages: InitProducerId, AddPartitionsToTxn
(v0-3 one transaction, v4+ batched for the brokers' verification), AddOffsetsToTxn,
EndTxn, TxnOffsetCommit, and WriteTxnMarkers (coordinator to leader; v2 is KIP-1228's)."""

from __future__ import annotations

import struct

from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from verifier.harness.kafka_wire.frames import (
    RequestHeader,
    WireError,
    body_offset,
    decode_request,
    decode_response,
    read_uvarint,
    skip_tagged_fields,
)
from verifier.harness.kafka_wire.model import (
    API_ADD_OFFSETS_TO_TXN,
    API_ADD_PARTITIONS_TO_TXN,
    API_END_TXN,
    API_INIT_PRODUCER_ID,
    API_TXN_OFFSET_COMMIT,
    API_WRITE_TXN_MARKERS,
    PartitionWrite,
    RequestIdentity,
    records_abort,
)

#: AddPartitionsToTxn from this version batches transactions (KIP-890, the brokers' own
#: verification requests)
BATCHED_ADD_VERSION = 4


def _partitions(topics, field: str = "partitions") -> tuple[PartitionWrite, ...]:
    """Each (topic, partition) of a request's topics (``field``: their partition list)."""
    return tuple(PartitionWrite(t.name or "", p) for t in topics for p in getattr(t, field))


def _add_partitions(request, header: RequestHeader, base: dict) -> RequestIdentity:
    """The transaction's id, producer and partitions; batched (v4+): the first one's."""
    if header.api_version < BATCHED_ADD_VERSION:
        return RequestIdentity(**base, transactional_id=request.v3_and_below_transactional_id,
                               producer_id=request.v3_and_below_producer_id,
                               producer_epoch=request.v3_and_below_producer_epoch,
                               partitions=_partitions(request.v3_and_below_topics))
    if not request.transactions:
        return RequestIdentity(**base)
    txn = request.transactions[0]
    return RequestIdentity(**base, transactional_id=txn.transactional_id,
                           producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                           partitions=_partitions(txn.topics))


def _write_txn_markers(request, header: RequestHeader, base: dict) -> RequestIdentity:
    """The first marker's producer id, epoch, result and partitions (the coordinator
    batches the markers it has for one leader; here one transactional producer writes at
    a time)."""
    if not request.markers:
        return RequestIdentity(**base)
    marker = request.markers[0]
    return RequestIdentity(**base, producer_id=marker.producer_id,
                           producer_epoch=marker.producer_epoch,
                           committed=bool(marker.transaction_result),
                           partitions=_partitions(marker.topics, "partition_indexes"))


def _producer(request, header: RequestHeader, base: dict) -> RequestIdentity:
    return RequestIdentity(**base, transactional_id=request.transactional_id,
                           producer_id=request.producer_id,
                           producer_epoch=request.producer_epoch)


def _end_txn(request, header: RequestHeader, base: dict) -> RequestIdentity:
    return RequestIdentity(**base, transactional_id=request.transactional_id,
                           producer_id=request.producer_id,
                           producer_epoch=request.producer_epoch,
                           committed=bool(request.committed))


def _init_producer_id(request, header: RequestHeader, base: dict) -> RequestIdentity:
    return RequestIdentity(**base, transactional_id=request.transactional_id)


#: api key -> (request message, its identity from the decoded request)
_REQUESTS = {
    API_INIT_PRODUCER_ID: (InitProducerIdRequest, _init_producer_id),
    API_ADD_PARTITIONS_TO_TXN: (AddPartitionsToTxnRequest, _add_partitions),
    API_ADD_OFFSETS_TO_TXN: (AddOffsetsToTxnRequest, _producer),
    API_END_TXN: (EndTxnRequest, _end_txn),
    API_WRITE_TXN_MARKERS: (WriteTxnMarkersRequest, _write_txn_markers),
}


def transaction_identity(payload: bytes, header: RequestHeader, base: dict) -> RequestIdentity:
    """The identity of a transaction API's request (``header.api_key`` one of them)."""
    if header.api_key == API_TXN_OFFSET_COMMIT:
        try:
            request = decode_request(TxnOffsetCommitRequest, payload, header)
        except WireError:  # the topics kafka-python cannot read (the Java client's v5)
            return RequestIdentity(**base, **txn_offset_commit_ids(payload, header),
                                   records_abort=records_abort(payload))
        return RequestIdentity(**base, transactional_id=request.transactional_id,
                               group_id=request.group_id, producer_id=request.producer_id,
                               producer_epoch=request.producer_epoch,
                               records_abort=records_abort(payload))
    cls, identity = _REQUESTS[header.api_key]
    return identity(decode_request(cls, payload, header), header, base)


#: TxnOffsetCommit's first flexible version (compact strings, a v2 header)
TXN_OFFSET_COMMIT_FLEXIBLE = 3


def txn_offset_commit_ids(payload: bytes, header: RequestHeader) -> dict:
    """What a TxnOffsetCommit request begins with in every version, read by hand:
    transactional id, group id, producer id and epoch. kafka-python 3.0.12's schema
    cannot read the topics of the Java client 4.4.0's v5 (a UnicodeDecodeError: the hold
    matched none of a Java application's TxnOffsetCommits, 2026-11-30), and the identity
    needs none of them."""
    at = body_offset(TxnOffsetCommitRequest, payload, header.api_version)
    compact = header.api_version >= TXN_OFFSET_COMMIT_FLEXIBLE
    try:
        txn, at = _string(payload, at, compact)
        group, at = _string(payload, at, compact)
        producer_id, epoch = struct.unpack_from(">qh", payload, at)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise WireError(f"TxnOffsetCommit v{header.api_version}: {exc!r}") from exc
    return {"transactional_id": txn, "group_id": group, "producer_id": producer_id,
            "producer_epoch": epoch}


#: TxnOffsetCommit's version whose topics are named by id (16 bytes), which kafka-python
#: 3.0.12 reads as names (the Java client 4.4.0 sends it to a 4.4.0 broker)
TXN_OFFSET_COMMIT_TOPIC_IDS = 5


def txn_offset_commit_errors(payload: bytes, version: int) -> list[int]:
    """The partitions' error codes of a TxnOffsetCommit answer whose topics are named by
    id, read by hand: throttle time, then per topic its id and its partitions (index,
    error code), each with its tagged fields. An answer not read to its last byte so is a
    WireError (not guessed)."""
    at = body_offset(TxnOffsetCommitResponse, payload, version)
    errors = []
    try:
        at += 4  # throttle_time_ms
        topics, at = read_uvarint(payload, at)
        for _ in range(topics - 1):
            at += 16  # topic id
            parts, at = read_uvarint(payload, at)
            for _ in range(parts - 1):
                (code,) = struct.unpack_from(">h", payload, at + 4)
                errors.append(code)
                at = skip_tagged_fields(payload, at + 6)
            at = skip_tagged_fields(payload, at)
        at = skip_tagged_fields(payload, at)
    except struct.error as exc:
        raise WireError(f"TxnOffsetCommitResponse v{version}: {exc!r}") from exc
    if at != len(payload):
        raise WireError(f"TxnOffsetCommitResponse v{version}: {len(payload) - at} bytes "
                        "left after its topics")
    return errors


def _string(payload: bytes, at: int, compact: bool) -> tuple[str | None, int]:
    """A (compact) string at ``at`` and where the next field starts."""
    if compact:  # unsigned varint: length + 1
        n, at = read_uvarint(payload, at)
        n -= 1
    else:
        (n,) = struct.unpack_from(">h", payload, at)
        at += 2
    if n < 0:
        return None, at
    if at + n > len(payload):
        raise IndexError(f"string of {n} bytes past the end")
    return bytes(payload[at:at + n]).decode("utf-8"), at + n


def _first_error(errors) -> int:
    return next((e for e in errors if e), 0)


def transaction_summary(payload: bytes, api_key: int, api_version: int) -> dict:
    """A transaction API's answer: its error code (AddPartitionsToTxn v0-3, TxnOffsetCommit
    and WriteTxnMarkers: the first partition error that is not 0); WriteTxnMarkers also
    ``markers``, ``[topic, partition, error code]``."""
    if api_key == API_WRITE_TXN_MARKERS:
        response = decode_response(WriteTxnMarkersResponse, payload, api_version)
        results = [[t.name or "", p.partition_index, p.error_code]
                   for m in response.markers for t in m.topics for p in t.partitions]
        return {"error_code": _first_error(e for *_, e in results), "markers": results}
    if api_key == API_TXN_OFFSET_COMMIT:
        try:
            response = decode_response(TxnOffsetCommitResponse, payload, api_version)
        except WireError:
            if api_version < TXN_OFFSET_COMMIT_TOPIC_IDS:
                raise
            return {"error_code": _first_error(txn_offset_commit_errors(payload, api_version))}
        return {"error_code": _first_error(p.error_code for t in response.topics
                                           for p in t.partitions)}
    if api_key == API_ADD_PARTITIONS_TO_TXN:
        response = decode_response(AddPartitionsToTxnResponse, payload, api_version)
        if api_version < BATCHED_ADD_VERSION:
            return {"error_code": _first_error(p.partition_error_code
                                               for t in response.results_by_topic_v3_and_below
                                               for p in t.results_by_partition)}
        return {"error_code": response.error_code}
    cls = {API_INIT_PRODUCER_ID: InitProducerIdResponse, API_END_TXN: EndTxnResponse,
           API_ADD_OFFSETS_TO_TXN: AddOffsetsToTxnResponse}[api_key]
    return {"error_code": decode_response(cls, payload, api_version).error_code}
