"""What a run recorded that the exposure counts from: plain values, gathered once per run
(verifier.judge.exposure_facts reads them from a run folder)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sends:
    """One producer's sends: invoke times (ms, sorted), and per send its partition,
    completion time (None: never completed) and transaction (None: none)."""

    invoked: list[int]
    partition: list[int]
    done: list[int | None]
    txn: list[int | None]


@dataclass(frozen=True)
class Txn:
    """One transaction of a producer: begun at ``begin`` (ms), ended (commit or abort
    completed, any outcome) at ``end`` or never."""

    txn: int
    begin: int
    end: int | None


@dataclass(frozen=True)
class Batch:
    """A micro-batch of a streaming query: planned at ``planned`` (ms), committed at
    ``committed`` (None: never), reading ``ranges`` {(topic, partition): (start, end)}."""

    batch: int
    planned: int
    committed: int | None
    ranges: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ColumnSpec:
    """What the exposure needs to know of a report column."""

    name: str
    mode: str
    pids: tuple[str, ...]  # its producers (empty for a pipeline)
    topics: tuple[str, ...]
    transactional: bool = False
    pipeline: str | None = None  # the pipeline's name for a pipeline column
    #: the application's label (``app:<name>``) for an application's column: judged on
    #: its own faults only, until the others count what they did to it (issue 47)
    app: str | None = None
    isolations: tuple[str, ...] = ()
    #: the transactional ids its producers use: a proxy rule or a copy that carries one
    #: (the coordinator's WriteTxnMarkers included) concerns this column
    transactional_ids: tuple[str, ...] = ()
    #: the client ids its producers' own settings name (a user's ``client.id``); the
    #: others are the generators' ``verifier.generator.<pid>``
    client_ids: tuple[str, ...] = ()
    #: how the client ids and transactional ids of an application's instances begin (its
    #: group id then ``.`` or ``-``: verifier.rundata.apps.client_prefixes)
    client_prefixes: tuple[str, ...] = ()


@dataclass
class RunFacts:
    """Everything the exposure is computed from, gathered once per run."""

    nemesis: list[dict]
    columns: list[ColumnSpec]
    sends: dict[str, Sends] = field(default_factory=dict)  # pid -> sends
    txns: dict[str, list[Txn]] = field(default_factory=dict)  # pid -> transactions
    #: reader -> its batches; readers: "observer/<isolation>", "pipeline/<name>"
    batches: dict[str, list[Batch]] = field(default_factory=dict)
    topic_of: dict[str, str] = field(default_factory=dict)  # pid -> topic
    #: client id -> pid, for client ids the tool did not name (a user's client.id)
    client_pid: dict[str, str] = field(default_factory=dict)
    #: "topic-partition" -> log start offset after the drain (where above 0)
    log_start: dict[str, int] = field(default_factory=dict)
