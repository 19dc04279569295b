"""What the hold fault reads of the requests and responses passing the proxy: a request's
identity, and what its answer says, for Produce and the transaction APIs (other APIs:
the header only, and an empty summary)."""

from __future__ import annotations

from verifier.harness.kafka_wire.frames import decode_request_header
from verifier.harness.kafka_wire.model import (
    API_ADD_OFFSETS_TO_TXN,
    API_ADD_PARTITIONS_TO_TXN,
    API_END_TXN,
    API_INIT_PRODUCER_ID,
    API_PRODUCE,
    API_TXN_OFFSET_COMMIT,
    API_WRITE_TXN_MARKERS,
    RequestIdentity,
)
from verifier.harness.kafka_wire.produce import produce_identity, produce_summary
from verifier.harness.kafka_wire.transaction import transaction_identity, transaction_summary

# one reading of an answer's error code, the proxy's and the exposure's
from verifier.judge.faults.hold_counts import error_of as response_error  # noqa: F401

#: the transaction APIs whose requests and responses are read
TRANSACTION_APIS = frozenset({API_INIT_PRODUCER_ID, API_ADD_PARTITIONS_TO_TXN,
                              API_ADD_OFFSETS_TO_TXN, API_END_TXN, API_TXN_OFFSET_COMMIT,
                              API_WRITE_TXN_MARKERS})


def request_identity(payload: bytes) -> RequestIdentity:
    """Parse what identifies a request (a :class:`RequestIdentity`); APIs this module
    does not read get the header only. A body that does not parse is a WireError."""
    h = decode_request_header(payload)
    base = dict(api_key=h.api_key, api_version=h.api_version, correlation_id=h.correlation_id,
                client_id=h.client_id)
    if h.api_key == API_PRODUCE:
        return produce_identity(payload, h, base)
    if h.api_key in TRANSACTION_APIS:
        return transaction_identity(payload, h, base)
    return RequestIdentity(**base)


def response_summary(payload: bytes, api_key: int, api_version: int) -> dict:
    """What a response says, for the APIs the hold fault follows: Produce, per partition
    ``[topic, partition, error code, base offset]``; the transactional APIs, their error
    code (AddPartitionsToTxn v0-3, TxnOffsetCommit and WriteTxnMarkers: the first
    partition error that is not 0; WriteTxnMarkers also ``markers``, ``[topic,
    partition, error code]``). Others: {}."""
    if api_key == API_PRODUCE:
        return produce_summary(payload, api_version)
    if api_key in TRANSACTION_APIS:
        return transaction_summary(payload, api_key, api_version)
    return {}


