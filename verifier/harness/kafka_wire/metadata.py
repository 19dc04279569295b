"""Asking one broker directly, on its own listener, what it knows: whether it is Kafka at
all (ApiVersions), which brokers are alive and who leads a partition (Metadata v1).

Readiness that does not depend on the advertised, possibly proxied, addresses (the
cluster manager), and the view of one side of a network partition (the tests, the
proxy's marker probe). A client library would pick any broker; these ask the one named.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest, MetadataResponse

from verifier.harness.kafka_wire.frames import (
    MAX_FRAME,
    ask,
    decode_response,
    encode_request,
    frame,
)

#: Kafka 4.x still serves Metadata v0+ (KIP-896 kept it for old clients)
METADATA_VERSION = 1
#: every broker answers ApiVersions v0, before authentication too
PROBE_CORRELATION_ID = 0x7E51


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def not_kafka(sock: socket.socket) -> str | None:
    """Ask for ApiVersions (v0) on a connected socket. None when a Kafka response to it
    comes back; otherwise what did instead (the first bytes, or nothing before the
    socket's timeout). Only the answer's size and correlation id are read, by hand:
    whatever answers may not speak Kafka at all."""
    request = ApiVersionsRequest(version=0)
    sock.sendall(frame(encode_request(request, PROBE_CORRELATION_ID, "verifier-probe")))
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
        if correlation == PROBE_CORRELATION_ID and 4 <= size <= MAX_FRAME:
            return None
        try:  # a little more of what answered, to name it
            sock.settimeout(0.5)
            got += sock.recv(32)
        except OSError:
            pass
    return f"it replied {got!r}" if got else "it closed the connection"


def _metadata(host: str, port: int, topics: list[str], client_id: str,
              timeout: float) -> MetadataResponse:
    """Metadata v1 of ``topics`` (none: the brokers only) from the broker at host:port."""
    topic = MetadataRequest.MetadataRequestTopic
    request = MetadataRequest(version=METADATA_VERSION,
                              topics=[topic(version=METADATA_VERSION, name=t) for t in topics])
    payload = ask(host, port, encode_request(request, 1, client_id), timeout)
    return decode_response(MetadataResponse, payload, METADATA_VERSION)


def metadata_brokers(host: str, port: int, timeout: float = 3.0) -> list[BrokerInfo]:
    """Ask the broker at host:port (directly, no proxy) which brokers are alive."""
    response = _metadata(host, port, [], "verifier-readiness", timeout)
    return [BrokerInfo(b.node_id, b.host, b.port) for b in response.brokers]


def metadata_partitions(host: str, port: int, topics: list[str],
                        timeout: float = 3.0) -> list[PartitionInfo]:
    """Leader, replicas and ISR of ``topics`` as the broker at host:port sees them."""
    response = _metadata(host, port, topics, "verifier-metadata", timeout)
    return [PartitionInfo(t.name, p.partition_index, p.leader_id, tuple(sorted(p.replica_nodes)),
                          tuple(sorted(p.isr_nodes)))
            for t in response.topics for p in t.partitions]
