"""What the codec says of a request: its identity (what the hold fault matches and the
nemesis history records), and the API keys it names."""

from __future__ import annotations

from dataclasses import dataclass

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_FIND_COORDINATOR = 10
API_API_VERSIONS = 18
API_INIT_PRODUCER_ID = 22
API_ADD_PARTITIONS_TO_TXN = 24
API_ADD_OFFSETS_TO_TXN = 25
API_END_TXN = 26
#: the coordinator's transaction markers to a partition leader (broker to broker)
API_WRITE_TXN_MARKERS = 27
API_TXN_OFFSET_COMMIT = 28

API_NAMES = {API_PRODUCE: "Produce", API_FETCH: "Fetch", API_METADATA: "Metadata",
             API_FIND_COORDINATOR: "FindCoordinator", API_INIT_PRODUCER_ID: "InitProducerId",
             API_ADD_PARTITIONS_TO_TXN: "AddPartitionsToTxn",
             API_ADD_OFFSETS_TO_TXN: "AddOffsetsToTxn", API_END_TXN: "EndTxn",
             API_TXN_OFFSET_COMMIT: "TxnOffsetCommit", API_API_VERSIONS: "ApiVersions",
             API_WRITE_TXN_MARKERS: "WriteTxnMarkers"}


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

    def touches(self, partition: int | None, topic: str | None) -> bool:
        """Whether one of its partitions is ``partition`` of ``topic`` (None: any)."""
        if partition is None and topic is None:
            return True
        return any((partition is None or p.partition == partition)
                   and (topic is None or p.topic == topic) for p in self.partitions)

    def to_json(self) -> dict:
        """The identity as the hold events and the nemesis history record it."""
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


_ABORT_TRUE, _ABORT_FALSE = b'"abort":true', b'"abort":false'


def records_abort(payload: bytes) -> bool | None:
    """Whether the uncompressed record values in a transactional Produce say their
    transaction is meant to abort (``"abort":true``, the generators' record format), or
    not (``"abort":false``); None when neither is there (compressed batches, other
    writers). One transaction's records all carry the same flag; so do the offsets'
    metadata of the copier's TxnOffsetCommit (producers.copier). A search of the bytes:
    the project's own record format, no protocol."""
    if _ABORT_TRUE in payload:
        return True
    if _ABORT_FALSE in payload:
        return False
    return None
