"""The vocabulary of the checks: anomaly kinds, the anomaly record schema, run data.

Every check returns a Spark DataFrame with exactly :data:`ANOMALY_COLUMNS`, one row per
anomaly, so the runner can count, sample and attribute them the same way whatever the
check. ``evidence`` is a JSON object (text) whose keys depend on the kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

from verifier.rundata.columns import report_modes
from verifier.rundata.vocab import (  # noqa: F401 - re-exported for the checks
    ABORTED_READ,
    ARCHIVED,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    ISOLATIONS,
    KINDS,
    LOST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REORDER,
    TORN,
    UNSEEN,
)
from verifier.rundata.vocab import MODES as PRESET_MODES  # noqa: F401 - re-exported

#: (name, Spark type) of an anomaly row; offsets holds every offset involved
ANOMALY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("isolation", "string"),
    ("reader", "string"),
    ("pid", "string"),
    ("ses", "int"),
    ("seq", "bigint"),
    ("txn", "bigint"),
    ("offset", "bigint"),
    ("offsets", "array<bigint>"),
    ("t", "bigint"),  # ms: when the record was sent (for the fault timeline)
    ("evidence", "string"),
)



def anomaly_frame(
    df: DataFrame, kind: str | Column, evidence: dict[str, Column], **cols: Column
) -> DataFrame:
    """Project ``df`` onto the anomaly schema; absent columns are typed nulls."""
    from pyspark.sql import functions as F

    kind_col = F.lit(kind) if isinstance(kind, str) else kind
    ev = (
        F.to_json(F.struct(*[c.alias(k) for k, c in evidence.items()])) if evidence else F.lit("{}")
    )
    given = {"kind": kind_col, "evidence": ev, **cols}
    out = []
    for name, typ in ANOMALY_COLUMNS:
        col = given.get(name)
        out.append((F.lit(None) if col is None else col).cast(typ).alias(name))
    return df.select(*out)


@dataclass(frozen=True)
class ProducerSpec:
    """One logical producer as config.json declares it."""

    pid: str
    mode: str  # column label: a preset name or a user label such as "user:my.properties"
    expect: str  # the preset whose expectations apply
    topic: str
    #: the copier's input topic (formats §2.1; verifier.judge.copier), else None
    input_topic: str | None = None


@dataclass(frozen=True)
class RunConfig:
    """The fields of config.json the verifier reads (docs/formats.md §5)."""

    run: str
    scenario: str
    sink: str  # "exactly-once" or "at-least-once": the observer's sink
    producers: dict[str, ProducerSpec]
    seed: int | None = None
    #: the pipelines under test (verifier.judge.pipeline.PipelineSpec), by name
    pipelines: dict = field(default_factory=dict)
    #: the applications under test (verifier.judge.application.AppSpec), by name
    apps: dict = field(default_factory=dict)

    def modes(self) -> list[str]:
        """Mode labels, presets first in their canonical order, then user labels."""
        return report_modes(p.mode for p in self.producers.values())

    def expect_of(self, mode: str) -> str:
        return next(p.expect for p in self.producers.values() if p.mode == mode)

    def topics_of(self, mode: str) -> set[str]:
        return {p.topic for p in self.producers.values() if p.mode == mode}


#: the reader the drain waits for (the Spark observer); every other reader (the plain
#: one) reads after the drain, each partition up to the end offset it looked up itself
OBSERVER = "spark"
#: the drain.json reason of a partition whose read_committed end (LSO) stayed below its
#: read_uncommitted end (docs/formats.md §4.2)
OPEN_TXN_REASON = "open transaction"


@dataclass(frozen=True)
class Drain:
    """drain.json: did every partition reach its end offsets at both isolation levels?

    Completeness is decided per (topic, partition, reader, isolation) by
    :meth:`incomplete` (docs/expectations.md §1, "complete"); the checks say ``unseen``
    only there, and a report column is UNKNOWN only for its own incomplete parts.
    """

    completed: bool
    partitions: list[dict] = field(default_factory=list)
    behind: list[dict] = field(default_factory=list)
    deadline_s: float | None = None
    #: the observer's positions were compared on every partition (drain format 2); format
    #: 1 compared them only once no transaction was open anywhere
    per_partition: bool = True
    #: {(topic, partition): log start offset} after the drain, where above 0 (drain.json
    #: ``log_start_offsets``): records below it were deleted (retention) and no reader
    #: can be blamed for not delivering them
    log_start: dict = field(default_factory=dict)

    def deleted(self, topic: str, partition: int, offset: int | None) -> bool:
        """Was the record at ``offset`` deleted from the log before the readers' end?"""
        return offset is not None and offset < self.log_start.get((topic, int(partition)), 0)

    def behind_keys(self) -> set[tuple[str, int]]:
        return {(b["topic"], int(b["partition"])) for b in self.behind}

    def _parts(self) -> tuple[dict, set, set, bool]:
        """(observer behind {(t, p, iso): "at position/end"}, open txn {(t, p)}, whole
        partition {(t, p)}, observer never checked)."""
        obs, open_txn, whole = {}, set(), set()
        for b in self.behind:
            key = (str(b["topic"]), int(b["partition"]))
            if b.get("isolation"):
                obs[(*key, str(b["isolation"]))] = (
                    f" (stopped at {b['observer_position']}/{b['end_offset']})"
                    if "observer_position" in b and "end_offset" in b else "")
            elif str(b.get("reason", "")).startswith(OPEN_TXN_REASON):
                open_txn.add(key)
            else:
                whole.add(key)
        # format 1 waited for a stable log before it looked at the observer: while a
        # transaction stayed open, the observer's positions were never compared
        return obs, open_txn, whole, bool(open_txn) and not self.per_partition

    def incomplete(self, topic: str, partition: int, reader: str, isolation: str) -> bool:
        """True when ``reader`` may not have read all of (topic, partition) at ``isolation``.

        - a completed drain: every part is complete;
        - not completed and nothing named in ``behind``: every part is incomplete;
        - ``{"isolation": ...}`` entries (observer behind): that part, for the observer;
        - an open transaction on (t, p): every reader at read_committed (nothing past the
          LSO is visible there); in a drain.json of format 1 also the observer
          everywhere (its positions were never compared);
        - any other entry: the whole partition, every reader, both levels.
        The plain reader reads each partition to the end offset it looks up after the
        drain, so outside those entries its parts are complete.
        """
        if self.completed:
            return False
        if not self.behind:
            return True
        obs, open_txn, whole, unchecked = self._parts()
        key = (topic, int(partition))
        if key in whole:
            return True
        if key in open_txn and isolation == READ_COMMITTED:
            return True
        return reader == OBSERVER and (unchecked or (*key, isolation) in obs)

    def incomplete_where(self, topics: set[str], isolations, readers) -> list[str]:
        """Human descriptions of the incomplete parts touching ``topics`` at ``isolations``
        for ``readers`` (empty: complete there)."""
        if self.completed:
            return []
        if not self.behind:
            return ["the drain did not complete (no partition named): every partition"]
        obs, open_txn, whole, unchecked = self._parts()
        out = [f"{t}-{p} (every reader)" for t, p in sorted(whole) if t in topics]
        if READ_COMMITTED in isolations:
            out += [f"{t}-{p} read_committed (open transaction)"
                    for t, p in sorted(open_txn) if t in topics]  # fmt: skip
        if OBSERVER in readers:
            if unchecked:
                out.append(f"every partition for reader {OBSERVER} (the drain stopped "
                           "before comparing its positions)")
            else:
                out += [f"{t}-{p} {i} for reader {OBSERVER}{at}"
                        for (t, p, i), at in sorted(obs.items())
                        if t in topics and i in isolations]  # fmt: skip
        return out


@dataclass
class RunData:
    """A run's data as the checks see it. Built by :func:`verifier.judge.checks.load_run`
    from a run folder, or by hand in tests."""

    config: RunConfig
    events: DataFrame | None  # history operations (invoke/ok/fail/info), all pids; None
    # when ``history`` holds them (load_run: no need to ship raw lines to Spark)
    observations: DataFrame  # observation format 1 rows
    combos: list[tuple[str, str]]  # (reader, isolation) pairs that have observations
    drain: Drain
    drain_partitions: DataFrame  # one row per partition of drain.json
    started: dict[str, bool] = field(default_factory=dict)  # pid -> a session began
    #: pid -> why its generator exited before producing (RUN/generators-failed.json)
    start_failures: dict[str, str] = field(default_factory=dict)
    nemesis: list[dict] = field(default_factory=list)  # raw nemesis operations
    history: pa.Table | None = None  # the operations as Arrow (load.HISTORY_SCHEMA + pid)


@dataclass
class Group:
    """Anomalies of one kind attributed to one mode at one isolation level (or None)."""

    kind: str
    mode: str
    isolation: str | None
    count: int
    sample: list[dict]
    timeline: list[tuple[int, int]] = field(default_factory=list)  # (bucket start ms, n)


@dataclass
class CheckOutcome:
    """What one check produced: groups, or the traceback of its crash."""

    name: str
    kinds: tuple[str, ...]
    groups: list[Group] = field(default_factory=list)
    error: str | None = None  # traceback text when the check crashed
    summary: str | None = None  # one line: exception class and first line of its message
    seconds: float = 0.0
    #: a pipeline's query that stopped with an error: Spark's message (never PASS)
    stopped: str | None = None
    #: why a pipeline's output could not be judged (no identity in it, a reference run
    #: that failed, a query not deterministic enough): its column is UNKNOWN with it
    unjudged: str | None = None
    #: what the column's oracle compared (the reference oracle's columns), for verdict.json
    detail: dict | None = None
