"""Error answers the proxy forges (the ``error_answer`` rule): a response a broker would
send, built on kafka-python's own messages.

- :func:`refused_response`: the answer to a request that never reaches the broker, as a
  broker that will not do the work answers it (a Produce to a broker that is not the
  leader: NOT_LEADER_OR_FOLLOWER on every partition, no offset), with the request's
  correlation id and version.
- :func:`replaced_response`: the broker's real answer with every error code replaced (a
  Produce the leader appended, answered REQUEST_TIMED_OUT as if it had not).

A version above kafka-python's newest cannot be encoded faithfully (its fields are not
known): a WireError, and the rule forwards such a request or answer untouched.
"""

from __future__ import annotations

import kafka.errors as KE
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

from verifier.harness.kafka_wire.frames import (
    DECODE_ERRORS,
    WireError,
    decode_request,
    decode_request_header,
    decode_response,
    response_correlation_id,
)
from verifier.harness.kafka_wire.model import (
    API_ADD_OFFSETS_TO_TXN,
    API_ADD_PARTITIONS_TO_TXN,
    API_END_TXN,
    API_FIND_COORDINATOR,
    API_INIT_PRODUCER_ID,
    API_PRODUCE,
    API_TXN_OFFSET_COMMIT,
)

#: the APIs an error answer may be forged for, by the names a scenario gives them
API_BY_NAME = {"produce": API_PRODUCE, "find-coordinator": API_FIND_COORDINATOR,
               "init-producer-id": API_INIT_PRODUCER_ID,
               "add-partitions-to-txn": API_ADD_PARTITIONS_TO_TXN,
               "add-offsets-to-txn": API_ADD_OFFSETS_TO_TXN, "end-txn": API_END_TXN,
               "txn-offset-commit": API_TXN_OFFSET_COMMIT}
#: api key -> (request message, response message)
MESSAGES: dict[int, tuple[type[ApiMessage], type[ApiMessage]]] = {
    API_PRODUCE: (ProduceRequest, ProduceResponse),
    API_FIND_COORDINATOR: (FindCoordinatorRequest, FindCoordinatorResponse),
    API_INIT_PRODUCER_ID: (InitProducerIdRequest, InitProducerIdResponse),
    API_ADD_PARTITIONS_TO_TXN: (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    API_ADD_OFFSETS_TO_TXN: (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    API_END_TXN: (EndTxnRequest, EndTxnResponse),
    API_TXN_OFFSET_COMMIT: (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
}
#: Kafka's current names that kafka-python 3.0.12 still spells the old way
_RENAMED = {"NOT_LEADER_OR_FOLLOWER": 6, "MESSAGE_TOO_LARGE": 10}
#: Kafka's error names -> codes (kafka.errors, with Kafka's current names too)
ERROR_CODES: dict[str, int] = {
    **{cls.message: code for code, cls in KE.kafka_errors.items()
       if code is not None and code > 0}, **_RENAMED}
#: the AddPartitionsToTxn version that batches transactions (brokers' verification)
_BATCHED_ADD_VERSION = 4
#: FindCoordinator's version that looks up several keys at once (KIP-699)
_BATCHED_FIND_VERSION = 4


def error_code(name: str) -> int:
    """The code of Kafka's error ``name`` (``NOT_LEADER_OR_FOLLOWER``: 6); KeyError for
    a name Kafka does not have (or that is not an error: NONE)."""
    return ERROR_CODES[name]


def retriable(code: int) -> bool:
    """Whether Kafka's error ``code`` is retriable (kafka.errors' flag): a client retries
    the request and, when it gives up, cannot know whether it was done."""
    return bool(KE.for_code(code).retriable)


def _check_version(cls: type[ApiMessage], version: int) -> None:
    if version > cls.max_version:
        raise WireError(f"{cls.__name__} v{version} is newer than kafka-python's "
                        f"v{cls.max_version}: its answer cannot be forged faithfully")


def _encode(response: ApiMessage, correlation_id: int) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True))


def refused_response(payload: bytes, code: int) -> bytes:
    """The response payload (header and body, no size) that answers the request
    ``payload`` with error ``code`` everywhere it has one: every partition of a Produce,
    AddPartitionsToTxn or TxnOffsetCommit, the request's own error otherwise; no offsets,
    producer id -1. WireError for an API not in :data:`MESSAGES` or a version kafka-python
    cannot encode."""
    header = decode_request_header(payload)
    if header.api_key not in MESSAGES:
        raise WireError(f"no error answer for api key {header.api_key}")
    req_cls, resp_cls = MESSAGES[header.api_key]
    _check_version(req_cls, header.api_version)
    request = decode_request(req_cls, payload, header)
    v = header.api_version
    try:
        body = _REFUSED[header.api_key](request, resp_cls, code, v)
        return _encode(resp_cls(**body, version=v), header.correlation_id)
    except DECODE_ERRORS as exc:
        raise WireError(f"{resp_cls.__name__} v{v}: {exc!r}") from exc


def _produce(request, cls, code: int, v: int) -> dict:
    topic, part = cls.TopicProduceResponse, cls.TopicProduceResponse.PartitionProduceResponse
    return {"throttle_time_ms": 0, "responses": [
        topic(name=t.name, topic_id=t.topic_id, partition_responses=[
            part(index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                 log_start_offset=-1, record_errors=[], error_message=None)
            for p in t.partition_data]) for t in request.topic_data]}


def _producer_id(request, cls, code: int, v: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1,
            "producer_epoch": -1}


def _add_offsets(request, cls, code: int, v: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code}


def _add_partitions(request, cls, code: int, v: int) -> dict:
    topic = cls.AddPartitionsToTxnTopicResult
    part = topic.AddPartitionsToTxnPartitionResult

    def results(topics) -> list:
        return [topic(name=t.name, results_by_partition=[
            part(partition_index=p, partition_error_code=code) for p in t.partitions])
            for t in topics]

    if v < _BATCHED_ADD_VERSION:
        return {"throttle_time_ms": 0,
                "results_by_topic_v3_and_below": results(request.v3_and_below_topics)}
    txn = cls.AddPartitionsToTxnResult
    return {"throttle_time_ms": 0, "error_code": code, "results_by_transaction": [
        txn(transactional_id=t.transactional_id, topic_results=results(t.topics))
        for t in request.transactions]}


def _txn_offset_commit(request, cls, code: int, v: int) -> dict:
    topic = cls.TxnOffsetCommitResponseTopic
    part = topic.TxnOffsetCommitResponsePartition
    return {"throttle_time_ms": 0, "topics": [
        topic(name=t.name, partitions=[part(partition_index=p.partition_index, error_code=code)
                                       for p in t.partitions]) for t in request.topics]}


def _find_coordinator(request, cls, code: int, v: int) -> dict:
    if v < _BATCHED_FIND_VERSION:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": None,
                "node_id": -1, "host": "", "port": -1}
    return {"throttle_time_ms": 0, "coordinators": [
        cls.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code,
                        error_message=None) for k in request.coordinator_keys]}


#: api key -> the body of its refused answer
_REFUSED = {API_PRODUCE: _produce, API_INIT_PRODUCER_ID: _producer_id,
            API_END_TXN: _producer_id, API_ADD_OFFSETS_TO_TXN: _add_offsets,
            API_ADD_PARTITIONS_TO_TXN: _add_partitions,
            API_TXN_OFFSET_COMMIT: _txn_offset_commit, API_FIND_COORDINATOR: _find_coordinator}


def replaced_response(payload: bytes, api_key: int, api_version: int, code: int) -> bytes:
    """The response payload ``payload`` (to a request of ``api_key`` and ``api_version``)
    with every error code in it set to ``code``; a Produce's partitions lose their
    offsets, as a broker's error answer has none. WireError for an API not in
    :data:`MESSAGES` or a version kafka-python cannot encode."""
    if api_key not in MESSAGES:
        raise WireError(f"no error answer for api key {api_key}")
    cls = MESSAGES[api_key][1]
    _check_version(cls, api_version)
    response = decode_response(cls, payload, api_version)
    for item in _error_holders(response, api_key, api_version):
        for name in ("error_code", "partition_error_code"):
            if hasattr(item, name):
                setattr(item, name, code)
        if api_key == API_PRODUCE:
            item.base_offset = item.log_append_time_ms = -1
    try:
        return _encode(response, response_correlation_id(payload))
    except DECODE_ERRORS as exc:
        raise WireError(f"{cls.__name__} v{api_version}: {exc!r}") from exc


def _error_holders(response, api_key: int, v: int) -> list:
    """The parts of a decoded response that carry an error code."""
    if api_key == API_PRODUCE:
        return [p for t in response.responses for p in t.partition_responses]
    if api_key == API_TXN_OFFSET_COMMIT:
        return [p for t in response.topics for p in t.partitions]
    if api_key == API_ADD_PARTITIONS_TO_TXN:
        if v < _BATCHED_ADD_VERSION:
            return [p for t in response.results_by_topic_v3_and_below
                    for p in t.results_by_partition]
        return [response, *(p for r in response.results_by_transaction
                            for t in r.topic_results for p in t.results_by_partition)]
    if api_key == API_FIND_COORDINATOR and v >= _BATCHED_FIND_VERSION:
        return list(response.coordinators)
    return [response]
