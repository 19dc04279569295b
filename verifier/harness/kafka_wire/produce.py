"""Produce (API key 0) through kafka-python's ``ProduceRequest`` / ``ProduceResponse``
(v3-13, the versions Kafka 4 serves) and ``kafka.record`` for the batches it carries;
only the ``acks`` the proxy reads on every Produce is read by hand (measured: the
package's docstring)."""

from __future__ import annotations

import struct

from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from verifier.harness.kafka_wire.frames import (
    DECODE_ERRORS,
    HEADER_SIZE,
    RequestHeader,
    WireError,
    decode_request,
    decode_request_header,
    decode_response,
    read_uvarint,
    skip_tagged_fields,
)
from verifier.harness.kafka_wire.model import (
    API_PRODUCE,
    PartitionWrite,
    RequestIdentity,
    records_abort,
)

_INT16 = struct.Struct(">h")


#: Produce became flexible (compact strings, tagged fields, request header v2) at v9
PRODUCE_FLEXIBLE_VERSION = 9
#: the first version with a transactional id (before the acks)
PRODUCE_TXN_VERSION = 3


def produce_acks(payload: bytes) -> int:
    """The ``acks`` field of a Produce request payload (header included).

    The proxy needs it because an ``acks=0`` request gets no response at all, so it must
    not wait for one when pairing responses with requests. Read by hand, on every Produce
    the proxy forwards: decoding the request with kafka-python to read this one field
    costs the proxy a fifth to a third of its Produce throughput (the package's docstring).
    """
    header = decode_request_header(payload)
    if header.api_key != API_PRODUCE:
        raise WireError(f"api key {header.api_key} is not Produce")
    (id_len,) = _INT16.unpack_from(payload, HEADER_SIZE)
    pos = HEADER_SIZE + 2 + max(id_len, 0)  # past the client id (a plain string in v1/v2)
    if header.api_version >= PRODUCE_FLEXIBLE_VERSION:
        pos = skip_tagged_fields(payload, pos)  # request header v2's
        n, pos = read_uvarint(payload, pos)  # compact nullable transactional id: len + 1
        pos += max(n - 1, 0)
    elif header.api_version >= PRODUCE_TXN_VERSION:
        if pos + 2 > len(payload):
            raise WireError("produce request ends before its transactional id")
        (n,) = _INT16.unpack_from(payload, pos)
        pos += 2 + max(n, 0)
    if pos + 2 > len(payload):
        raise WireError("produce request ends before its acks field")
    return _INT16.unpack_from(payload, pos)[0]


#: the first version that names topics by id (KIP-516)
TOPIC_ID_VERSION = 13


def _topic(topic, version: int) -> str:
    """A topic as a request or response names it: its name, or from v13 its id in hex
    (kafka-python reads the all-zero id as None)."""
    if version < TOPIC_ID_VERSION:
        return topic.name or ""
    return topic.topic_id.hex if topic.topic_id is not None else "0" * 32


def _first_batch(records: bytes | None) -> dict:
    """The producer fields of the first record batch of a partition's records (magic 2
    only: older batches carry none)."""
    if not records or len(records) < DefaultRecordBatch.HEADER_STRUCT.size:
        return {}
    try:
        batch = MemoryRecords(records).next_batch()
    except DECODE_ERRORS as exc:
        raise WireError(f"record batch: {exc!r}") from exc
    if not isinstance(batch, DefaultRecordBatch):
        return {}
    return {"producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
            "base_sequence": batch.base_sequence, "records": batch.records_count}


def produce_identity(payload: bytes, header: RequestHeader, base: dict) -> RequestIdentity:
    """A Produce request's identity: transactional id (v3+), acks, and per partition the
    first batch's producer id, epoch, base sequence and record count."""
    request = decode_request(ProduceRequest, payload, header)
    txn = request.transactional_id
    parts = [PartitionWrite(_topic(topic, header.api_version), data.index,
                            **_first_batch(data.records))
             for topic in request.topic_data for data in topic.partition_data]
    pid = next((p.producer_id for p in parts if p.producer_id is not None), None)
    epoch = next((p.producer_epoch for p in parts if p.producer_epoch is not None), None)
    return RequestIdentity(**base, transactional_id=txn, producer_id=pid,
                           producer_epoch=epoch, acks=request.acks, partitions=tuple(parts),
                           records_abort=records_abort(payload) if txn else None)


def produce_summary(payload: bytes, api_version: int) -> dict:
    """Per partition ``[topic, partition, error code, base offset]``."""
    response = decode_response(ProduceResponse, payload, api_version)
    return {"partitions": [[_topic(topic, api_version), p.index, p.error_code, p.base_offset]
                           for topic in response.responses
                           for p in topic.partition_responses]}
