"""Kafka's wire protocol as this project speaks it: the one codec of the fault proxy, its
marker probe, the log reader and the cluster's readiness checks.

Request and response bodies are kafka-python's own messages (``kafka.protocol``, built
from Kafka's JSON message schemas: Produce v3-13, the transaction APIs with
WriteTxnMarkers v1-2, Metadata, ApiVersions, ListOffsets, Fetch) and record batches are
``kafka.record``'s; one module here per protocol API, as kafka-python has:

- ``frames``: framing, the request header, the bridge to kafka-python's messages
- ``produce``, ``transaction``: what the hold fault reads of requests and answers
  (``identity`` dispatches on the API key; ``model`` is the identity it builds)
- ``error_answer``: the answers the ``error_answer`` rule forges (a refused request's,
  a broker's answer with its error codes replaced)
- ``metadata``: ApiVersions and Metadata asked of one broker directly
- ``log``: ListOffsets, Fetch and the batch headers of a partition's log

Kept by hand, each because kafka-python lacks it or is measured too slow where it runs
(``benchmarks/wire_bench.py``, figures of 2026-11-29 in docs/benchmarks.md, calls per
second on the recorded frames of tests/data/wire):

- **framing** (``FrameBuffer``, ``frame``): splitting a byte stream into size-prefixed
  frames. kafka-python's parser (``kafka.protocol.parser``) is a client's: it reads only
  responses to requests it sent itself, and a proxy reads both directions of strangers'.
- **the request header's common part** (``decode_request_header``: api key, version,
  correlation id, client id; the same in header v1 and v2): read on every request the
  proxy forwards. By hand 863k calls/s, kafka-python's ``RequestHeader.decode`` 258k.
- **Produce's acks** (``produce_acks``, and the unsigned varint its flexible versions
  need): read on every Produce the proxy forwards (an acks=0 request gets no answer). By
  hand 495k calls/s, through kafka-python's ``ProduceRequest`` 77k (6.4x slower); in the
  proxy that is 21.9k instead of 29.2k small Produce requests forwarded per second (45.5
  instead of 34.2 us of CPU each), 6.8k instead of 8.1k with two 16 KiB batches.
- **the correlation id a response starts with** (``response_correlation_id``): one int32
  read on every response the proxy forwards, before it knows which API answers.
- **not_kafka**'s check of the answer: only its first 8 bytes (size, correlation id),
  since whatever answered may not speak Kafka.
- **records_abort**: a byte search for the generators' own record format (no protocol).

The rest runs only while a hold rule is set (every request's identity, the answers of
Produce and the transaction APIs) or in the marker probe: kafka-python's messages there
read 0.25-0.87 times as fast as the parser they replaced, and the proxy forwards 16.0k
instead of 19.0k small Produce requests per second while a hold rule is set (the
scenarios that set one send 100 records a second per generator).
"""

from verifier.harness.kafka_wire.error_answer import (
    API_BY_NAME,
    ERROR_CODES,
    refused_response,
    replaced_response,
    retriable,
)
from verifier.harness.kafka_wire.frames import (
    MAX_FRAME,
    FrameBuffer,
    RequestHeader,
    WireError,
    ask,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_request_header,
    frame,
    response_correlation_id,
)
from verifier.harness.kafka_wire.identity import (
    request_identity,
    response_error,
    response_summary,
)
from verifier.harness.kafka_wire.log import (
    BatchHeader,
    FetchedPartition,
    fetch_request,
    list_offsets_request,
    parse_fetch,
    parse_list_offsets,
    record_batches,
)
from verifier.harness.kafka_wire.metadata import (
    BrokerInfo,
    PartitionInfo,
    metadata_brokers,
    metadata_partitions,
    not_kafka,
)
from verifier.harness.kafka_wire.model import (
    API_ADD_OFFSETS_TO_TXN,
    API_ADD_PARTITIONS_TO_TXN,
    API_API_VERSIONS,
    API_END_TXN,
    API_FETCH,
    API_FIND_COORDINATOR,
    API_INIT_PRODUCER_ID,
    API_LIST_OFFSETS,
    API_METADATA,
    API_NAMES,
    API_PRODUCE,
    API_TXN_OFFSET_COMMIT,
    API_WRITE_TXN_MARKERS,
    PartitionWrite,
    RequestIdentity,
    records_abort,
)
from verifier.harness.kafka_wire.produce import produce_acks

__all__ = [
    "API_ADD_OFFSETS_TO_TXN", "API_ADD_PARTITIONS_TO_TXN", "API_API_VERSIONS",
    "API_BY_NAME", "API_END_TXN", "API_FETCH", "API_FIND_COORDINATOR",
    "API_INIT_PRODUCER_ID", "API_LIST_OFFSETS", "API_METADATA", "API_NAMES", "API_PRODUCE",
    "API_TXN_OFFSET_COMMIT", "API_WRITE_TXN_MARKERS", "BatchHeader", "BrokerInfo",
    "ERROR_CODES", "FetchedPartition", "FrameBuffer", "MAX_FRAME", "PartitionInfo",
    "PartitionWrite", "RequestHeader", "RequestIdentity", "WireError", "ask",
    "decode_request", "decode_request_header", "decode_response", "encode_request",
    "encode_request_header", "fetch_request", "frame", "list_offsets_request",
    "metadata_brokers", "metadata_partitions", "not_kafka", "parse_fetch",
    "parse_list_offsets", "produce_acks", "record_batches", "records_abort",
    "refused_response", "replaced_response", "request_identity", "response_correlation_id",
    "response_error", "response_summary", "retriable",
]
