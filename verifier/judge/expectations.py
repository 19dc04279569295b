"""The expectation table: what each delivery mode may show, as data (DESIGN §6).

Keyed by (mode, isolation level); each anomaly kind is forbidden, tolerated, expected, or
n/a (the mode cannot produce it). ``docs/expectations.md`` prints this table and says why
each entry is what it is; change both together.
"""

from __future__ import annotations

from verifier.judge.model import (
    ABORTED_READ,
    ARCHIVED,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    LOST,
    PRESET_MODES,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REORDER,
    TORN,
    UNSEEN,
)  # fmt: skip
from verifier.rundata.apps import GUARANTEES
from verifier.rundata.vocab import SINKS as VOCAB_SINKS

FORBIDDEN = "forbidden"  # any occurrence fails the mode
TOLERATED = "tolerated"  # may occur; reported, never fails the mode
EXPECTED = "expected"  # should occur under the named conditions; reported, never fails
INCONCLUSIVE = "inconclusive"  # any occurrence makes the verdict UNKNOWN
NA = "n/a"  # the mode cannot produce it (no transactions)

PRESETS = PRESET_MODES
SINKS = VOCAB_SINKS
RC, RU = READ_COMMITTED, READ_UNCOMMITTED
F, T, E, N = FORBIDDEN, TOLERATED, EXPECTED, NA

#: columns of the table in DESIGN §6, in order
COLUMNS: tuple[tuple[str, str], ...] = (
    ("at-most-once", RC), ("at-least-once", RC), ("idempotent", RC),
    ("transactional", RC), ("transactional", RU),
)  # fmt: skip

#: anomaly -> one entry per column of COLUMNS (DESIGN §6, row by row)
_ROWS: dict[str, tuple[str, ...]] = {
    LOST:         (T, F, F, F, F),  # transactional: committed records only
    DUP_SAME:     (F, T, F, F, T),
    DUP_CROSS:    (F, T, T, F, E),  # expected at read_uncommitted under producer kill
    REORDER:      (T, T, F, F, T),  # at-most-once: docs/expectations.md, "Reorder at at-most-once"
    ABORTED_READ: (N, N, N, F, E),
    TORN:         (N, N, N, F, T),
    HANGING:      (F, F, F, F, F),
    INCONSISTENT: (F, F, F, F, F),
    FOREIGN:      (F, F, F, F, F),
}  # fmt: skip

#: an unseen record (drain incomplete) could be lost or late: where loss is forbidden it
#: leaves the verdict open; where loss is tolerated it is tolerated too
_UNSEEN_IF_LOST = {F: INCONCLUSIVE, T: T, E: INCONCLUSIVE}

#: duplicate (delivery) depends on the observer's sink, not on the producer mode
DELIVERY_BY_SINK = {"exactly-once": FORBIDDEN, "at-least-once": TOLERATED}

#: conditions under which an EXPECTED entry is expected (else it is only tolerated)
CONDITIONS: dict[tuple[str, str, str], str] = {
    ("transactional", RU, DUP_CROSS): "producer-kill",
}

#: (mode, isolation) -> anomaly -> entry; non-transactional modes read the same at both
#: levels (read_committed only hides transactional records), so their RU entry is RC's
TABLE: dict[tuple[str, str], dict[str, str]] = {}
for _i, (_mode, _iso) in enumerate(COLUMNS):
    TABLE[(_mode, _iso)] = {k: row[_i] for k, row in _ROWS.items()}
for _mode in PRESETS:
    if (_mode, RU) not in TABLE:
        TABLE[(_mode, RU)] = dict(TABLE[(_mode, RC)])


#: the pipelines under test (issue 21), one row per guarantee a pipeline claims, judged
#: on its output: every input record once (exactly-once) or at least once; a duplicate
#: in the output is a duplicate delivery; log-side kinds are the producers' columns'
PIPELINE_GUARANTEES = ("exactly-once", "at-least-once")
_LOG_SIDE = (DUP_SAME, DUP_CROSS, REORDER, ABORTED_READ, TORN, HANGING, INCONSISTENT)
for _g, _dup in (("exactly-once", F), ("at-least-once", T)):
    for _iso in (RC, RU):
        TABLE[(f"pipeline/{_g}", _iso)] = {LOST: F, DUP_DELIVERY: _dup, FOREIGN: F,
                                           **dict.fromkeys(_LOG_SIDE, N)}


#: a pipeline whose Kafka source runs with failOnDataLoss=false (issue 34): Spark skips
#: the offsets Kafka no longer holds and goes on, as documented; the records retention
#: deleted before the query read them are lost, expected under the retention fault.
#: With failOnDataLoss=true (Spark's default, the rows above) the query stops with an
#: error instead: that column is reported stopped (UNKNOWN, Spark's message), and a loss
#: stays forbidden.
SKIPS_LOST = "+failOnDataLoss=false"
RETENTION = "retention"
for _g in PIPELINE_GUARANTEES:
    for _iso in (RC, RU):
        TABLE[(f"pipeline/{_g}{SKIPS_LOST}", _iso)] = {**TABLE[(f"pipeline/{_g}", _iso)],
                                                       LOST: E}
        CONDITIONS[(f"pipeline/{_g}{SKIPS_LOST}", _iso, LOST)] = RETENTION
#: what an EXPECTED entry is outside its condition, where not TOLERATED: a pipeline that
#: skips lost offsets may lose records to retention, to nothing else
OTHERWISE: dict[tuple[str, str, str], str] = {
    key: FORBIDDEN for key in CONDITIONS if key[0].endswith(SKIPS_LOST)}


#: the consumer applications under test (issue 47), one row per guarantee an application
#: claims, judged on its output topic read back at both isolation levels: every input
#: record (read_committed) in the output once, at least once or at most once, and the
#: records of one input partition in their input order within an output partition (the
#: first copy of each; a replayed copy is a duplicate, not a reorder). An exactly-once
#: application's aborted transactions are visible at read_uncommitted: duplicates and
#: reorders there are tolerated, as for the transactional producer column.
APP_GUARANTEES = GUARANTEES
_APP_ROWS: dict[tuple[str, str], tuple[str, str, str]] = {  # LOST, DUP_DELIVERY, REORDER
    ("at-most-once", RC): (T, F, T), ("at-most-once", RU): (T, F, T),
    ("at-least-once", RC): (F, T, T), ("at-least-once", RU): (F, T, T),
    ("exactly-once", RC): (F, F, F), ("exactly-once", RU): (F, T, T),
}  # fmt: skip
_APP_LOG_SIDE = tuple(k for k in _LOG_SIDE if k != REORDER)
for (_g, _iso), (_lost, _dup, _reorder) in _APP_ROWS.items():
    # a share group's record archived after its delivery-attempt limit (KIP-932) is a
    # drop the broker makes on purpose: tolerated where loss is allowed or the claim is
    # at-least-once (a share group's only), forbidden under exactly-once
    TABLE[(f"app/{_g}", _iso)] = {LOST: _lost, DUP_DELIVERY: _dup, REORDER: _reorder,
                                  FOREIGN: F, ARCHIVED: F if _g == "exactly-once" else T,
                                  **dict.fromkeys(_APP_LOG_SIDE, N)}
for _row in TABLE.values():  # only a share group archives records
    _row.setdefault(ARCHIVED, N)


def app_row(guarantee: str) -> str:
    """The expectation-table row of an application claiming ``guarantee``."""
    return f"app/{guarantee}"


def pipeline_row(guarantee: str, fail_on_data_loss: bool = True) -> str:
    """The expectation-table row of a pipeline claiming ``guarantee``."""
    return f"pipeline/{guarantee}" + ("" if fail_on_data_loss else SKIPS_LOST)


def expectation(mode: str, isolation: str, kind: str, sink: str = "exactly-once") -> str:
    """The table entry for ``kind`` under ``mode`` (a preset, ``pipeline/<guarantee>`` or
    ``app/<guarantee>``)
    read at ``isolation``; a producer column's duplicate deliveries are the observer's
    sink's (DELIVERY_BY_SINK)."""
    row = TABLE[(mode, isolation)]
    if kind == UNSEEN:
        return _UNSEEN_IF_LOST.get(row[LOST], TOLERATED)
    if kind in row:
        return row[kind]
    return DELIVERY_BY_SINK[sink]


#: what each preset pipeline's sink promises under each of Spark's failures (issue 34;
#: docs/expectations.md, "What each sink promises"): the guarantee a preset claims is the
#: weakest of its row (tests/unit/judge/test_sink_promises.py). A driver kill replays the
#: batch it had not committed; an executor or worker kill re-runs the tasks it took with
#: it. Kafka's sink has neither a batch nor a task commit: both write again. The file and
#: Delta sinks commit a batch once and a task's files only through the job's commit
#: protocol, so a lost attempt's files are discarded. A naive ``foreachBatch`` replays
#: its whole write after a driver kill, but its write job (Parquet) discards a lost task
#: attempt like the file sink. The stateful dedup restores its state store to the last
#: committed batch and writes to Delta.
DRIVER_KILL, EXECUTOR_KILL = "driver-kill", "executor-kill"
SINK_PROMISES: dict[str, dict[str, str]] = {
    "kafka-sink": {DRIVER_KILL: "at-least-once", EXECUTOR_KILL: "at-least-once"},
    "file": {DRIVER_KILL: "exactly-once", EXECUTOR_KILL: "exactly-once"},
    "delta": {DRIVER_KILL: "exactly-once", EXECUTOR_KILL: "exactly-once"},
    "foreach-batch": {DRIVER_KILL: "at-least-once", EXECUTOR_KILL: "exactly-once"},
    "foreach-batch-idempotent": {DRIVER_KILL: "exactly-once", EXECUTOR_KILL: "exactly-once"},
    "dedup-state": {DRIVER_KILL: "exactly-once", EXECUTOR_KILL: "exactly-once"},
    # issue 46: PostgreSQL through foreachBatch; Spark's JDBC writer commits each task's
    # rows in one transaction, so a lost task's rows are rolled back and written once
    "postgres-upsert": {DRIVER_KILL: "exactly-once", EXECUTOR_KILL: "exactly-once"},
    "postgres-append": {DRIVER_KILL: "at-least-once", EXECUTOR_KILL: "exactly-once"},
}


def sink_promise(preset: str, failure: str) -> str:
    """What ``preset``'s sink promises under ``failure`` (DRIVER_KILL, EXECUTOR_KILL: a
    worker kill is its executors' kill)."""
    return SINK_PROMISES[preset][failure]


#: strictness order used to merge the entries of the levels one report column covers
_RANK = {FORBIDDEN: 4, INCONCLUSIVE: 3, TOLERATED: 2, EXPECTED: 1, NA: 0}


def strictest(entries: list[str]) -> str:
    return max(entries, key=_RANK.__getitem__)
