"""A pipeline under test judged from input to output (issue 21).

Pure: the input log (what the run's topics held at the pipeline's isolation level, as
the plain reader read it after the drain), the pipeline's read-back output rows and its
checkpoints' batches in; anomalies out, as :class:`~verifier.judge.model.Group` values of
the pipeline's column, judged by the expectation table's pipeline rows.

Per input partition, each record of the log (one offset) must reach the output once
(``exactly-once``) or at least once (``at-least-once``). Records are followed by their
decoded identity (formats §4: producer, partition, sequence, session, transaction, send
time): an identity the log holds at *k* offsets (a producer's own duplicate) must be in
the output *k* times.

- fewer copies in the output: ``lost`` (``unseen`` when the pipeline had not committed a
  batch past that offset: lost or late);
- more copies: ``duplicate-delivery`` (the sink wrote a record again: a replayed batch,
  a batch re-run under a new checkpoint);
- an output row that does not decode, belongs to another run, or is no input record:
  ``foreign-record``.

Evidence names the batches: those that read the record (from the checkpoints' offset
logs, ``<checkpoint generation>:<batch id>``) and, when the output carries a ``batch``
column, the batch id of each copy; when it carries the task attempt (the Kafka sink
preset's headers), each copy's task and whether the copies are a task retry or a batch
replay (verifier.judge.task_attempts).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge import task_attempts
from verifier.judge.model import DUP_DELIVERY, FOREIGN, LOST, UNSEEN, CheckOutcome, Group
from verifier.judge.traceable import no_identity

KEY = ("pid", "p", "seq", "ses", "txn", "ts_send")
KINDS = (LOST, UNSEEN, DUP_DELIVERY, FOREIGN)
BUCKET_MS = 1000  # as the checks' timeline


@dataclass(frozen=True)
class PipelineSpec:
    """One pipeline as config.json declares it."""

    name: str
    label: str  # its report column's mode: "pipeline:<name>"
    expect: str  # its expectation-table row: "pipeline/<guarantee>"
    isolation: str
    #: the pipeline file's oracle and its columns (verifier.rundata.pipeline_file)
    oracle: str = "identity"
    trace_column: str = "value"
    key_columns: tuple[str, ...] = ()
    ignore_columns: tuple[str, ...] = ()
    #: the topics it reads when it declares its own (INPUT); empty: the run's
    topics: tuple[str, ...] = ()


def input_log(obs: pa.Table) -> pa.Table:
    """One row per (topic, partition, offset) of decoded records (``obs``: observation
    rows of one isolation level)."""
    keep = obs.filter(pc.invert(pc.fill_null(obs["foreign"], False)))
    cols = ["topic", "partition", "offset", *KEY]
    return keep.select(cols).group_by(["topic", "partition", "offset"]).aggregate(
        [(k, "min") for k in KEY]).rename_columns(cols)


class BatchIndex:
    """Which planned batch of which checkpoint covered an offset (position semantics:
    batch N covers [end of N-1, end of N) per partition)."""

    def __init__(self, batches: list[dict]):
        self._by: dict[tuple, tuple[list[int], list[str]]] = {}
        ordered = sorted(batches, key=lambda b: (b["generation"], b["batch"]))
        for b in ordered:
            for tp, end in b["end"].items():
                ends, names = self._by.setdefault((b["generation"], tp), ([], []))
                ends.append(int(end))
                names.append(f"{b['generation']}:{b['batch']}")

    def covering(self, topic: str, partition: int, offset: int) -> list[str]:
        out = []
        for (_gen, tp), (ends, names) in sorted(self._by.items()):
            if tp == f"{topic}-{partition}":
                i = bisect.bisect_right(ends, offset)
                if i < len(ends):
                    out.append(names[i])
        return out

    def committed_ends(self, batches: list[dict]) -> dict[str, int]:
        """The live checkpoint's committed position per partition."""
        live = max((b["generation"] for b in batches), default=None)
        ends: dict[str, int] = {}
        for b in batches:
            if b["generation"] == live and b["committed"]:
                for tp, end in b["end"].items():
                    ends[tp] = max(ends.get(tp, 0), int(end))
        return ends


def judge(spec: PipelineSpec, log: pa.Table, out: pa.Table, batches: list[dict],
          drain_ends: dict[str, int] | None, run_id: str, cap: int = 20,
          log_start: dict[str, int] | None = None,
          position: dict[str, int] | None = None) -> tuple[CheckOutcome, dict]:
    """The pipeline's check outcome and its counts (``sent``: input records in the log at
    its isolation level, ``observed``: output rows). ``drain_ends``: per
    ``"topic-partition"`` the end offset the drain reached at that level (None: the
    drain did not complete, every missing record is unseen). ``log_start``: per
    ``"topic-partition"`` the log start offset after the drain (where the plain reader
    began): a missing record below it was deleted by retention before the pipeline read
    it, which its evidence says. ``position``: per ``"topic-partition"`` how far the
    reader committed, when it is not a checkpoint's (a consumer group's committed offsets:
    verifier.judge.application); default: the live checkpoint's committed batches."""
    index = BatchIndex(batches)
    if position is None:
        position = index.committed_ends(batches)
    where: dict[tuple, list[tuple]] = defaultdict(list)
    for r in log.to_pylist():
        where[tuple(r[k] for k in KEY)].append((r["topic"], r["partition"], r["offset"]))
    copies: dict[tuple, list] = defaultdict(list)
    tasks: dict[tuple, list] = defaultdict(list)  # (batch, task attempt) of each copy
    topic_of = {key[0]: locs[0][0] for key, locs in where.items()}
    found: dict[str, list[dict]] = {k: [] for k in KINDS}
    for r in out.to_pylist():
        key = tuple(r[k] for k in KEY)
        if r["foreign"] or r["run"] != run_id or key not in where:
            why = r["error"] or ("not a record of the input log" if r["run"] == run_id
                                 else f"another run: {r['run']}")
            found[FOREIGN].append(_row(spec, FOREIGN, topic_of.get(r["pid"]), r, None,
                                       {"error": why, "batch": r["batch"]}))
            continue
        copies[key].append(r["batch"])
        tasks[key].append((r["batch"], r.get("task")))
    for key, locs in where.items():
        n_in, got = len(locs), copies.get(key, [])
        if len(got) == n_in:
            continue
        topic, part, offset = locs[0]
        ident = dict(zip(KEY, key, strict=True))
        read_by = sorted({b for t, p, o in locs for b in index.covering(t, p, o)})
        ev = {"in_log": n_in, "in_output": len(got), "offsets": [o for *_, o in locs],
              "read_by_batches": read_by}
        if any(b is not None for b in got):
            ev["output_batches"] = sorted(b for b in got if b is not None)
        ev.update(task_attempts.evidence(tasks.get(key, [])))
        if len(got) > n_in:
            found[DUP_DELIVERY].append(_row(spec, DUP_DELIVERY, topic, ident, offset, ev))
            continue
        tp = f"{topic}-{part}"
        late = (drain_ends is None or position.get(tp, 0) < drain_ends.get(tp, 0)
                or position.get(tp, 0) <= offset)
        kind = UNSEEN if late else LOST
        gone = (log_start or {}).get(tp, 0)
        if offset < gone:
            ev["deleted"] = (f"offset {offset} is below {tp}'s log start offset {gone} "
                             "after the drain (the plain reader's earliest offset): "
                             "retention deleted it before this pipeline read it; the "
                             "producer wrote it and the observer read it")
        found[kind].append(_row(spec, kind, topic, ident, offset,
                                {**ev, "position": position.get(tp)}))
    outcome = CheckOutcome(spec.label, KINDS)
    for kind, rows in found.items():
        if rows:
            rows.sort(key=lambda r: (r.get("topic", ""), r.get("partition", -1),
                                     r.get("offset", -1)))
            outcome.groups.append(Group(kind, spec.label, spec.isolation, len(rows),
                                        rows[:cap], _timeline(rows)))
    counts = {"sent": log.num_rows, "observed": out.num_rows,
              f"observed_{spec.isolation}": out.num_rows}
    return outcome, counts


def _row(spec: PipelineSpec, kind: str, topic, ident: dict, offset, evidence: dict) -> dict:
    row = {"kind": kind, "topic": topic, "partition": ident.get("p"),
           "isolation": spec.isolation, "reader": spec.label, "pid": ident.get("pid"),
           "ses": ident.get("ses"), "seq": ident.get("seq"), "txn": ident.get("txn"),
           "offset": offset, "offsets": evidence.get("offsets"), "t": ident.get("ts_send"),
           "evidence": {k: v for k, v in evidence.items() if v is not None}}
    return {k: v for k, v in row.items() if v is not None}


def _timeline(rows: list[dict]) -> list[tuple[int, int]]:
    buckets: dict[int, int] = defaultdict(int)
    for r in rows:
        if r.get("t") is not None:
            buckets[int(r["t"]) // BUCKET_MS * BUCKET_MS] += 1
    return sorted(buckets.items())


__all__ = ["KINDS", "BatchIndex", "PipelineSpec", "input_log", "judge"]


def read_input_log(run_dir, isolation: str) -> pa.Table:
    """The run's topics at ``isolation``: every offset the plain reader read after the
    drain or the Spark observer read while the run went (records retention deleted
    before the plain reader's turn are in the observer's rows only)."""
    import pyarrow.dataset as ds

    from verifier.rundata.layout import RunLayout

    cols = ["topic", "partition", "offset", "foreign", *KEY]
    files = []
    for reader in ("plain", "spark"):
        folder = RunLayout(run_dir).observations_of(reader, isolation)
        files += sorted(str(f) for f in folder.glob("[!._]*.parquet")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no observations at {isolation} in {run_dir}")
    return input_log(ds.dataset(files, format="parquet").to_table(columns=cols))


def judge_run(run_dir, config, drain, cap: int = 20) -> tuple[list[CheckOutcome], dict]:
    """Every pipeline of a run folder: its outcome (a crashed check, UNKNOWN, when its
    output was never read back) and counts keyed by its column's mode."""
    import time
    import traceback

    from verifier.rundata.pipelines import PipelineLayout, read_readback

    outcomes, counts = [], {}
    for spec in config.pipelines.values():
        start = time.perf_counter()
        try:
            if spec.oracle == "reference":
                from verifier.judge.pipeline_reference import judge_reference

                outcome, c = judge_reference(run_dir, spec, cap)
                counts[spec.label] = {"sent": _input_count(run_dir, spec), **c}
                outcome.seconds = time.perf_counter() - start
                outcomes.append(outcome)
                continue
            rows, info = read_readback(PipelineLayout(run_dir, spec.name))
            ends = None
            if drain.completed:
                key = f"end_{spec.isolation}"
                ends = {f"{p['topic']}-{p['partition']}": int(p[key]) for p in drain.partitions}
            starts = {f"{t}-{p}": o for (t, p), o in drain.log_start.items()}
            log = _own_topics(read_input_log(run_dir, spec.isolation), spec)
            outcome, c = judge(spec, log, rows, info.get("batches") or [], ends, config.run,
                               cap, starts)
            outcome.stopped = info.get("query_error")
            outcome.unjudged = no_identity(rows, spec.trace_column)
            if outcome.unjudged:  # never "every input lost, every row foreign"
                outcome.groups = []
            counts[spec.label] = c
        except Exception as exc:  # noqa: BLE001 - a check that cannot run is UNKNOWN
            outcome = CheckOutcome(spec.label, KINDS, error=traceback.format_exc(),
                                   summary=f"{type(exc).__name__}: {exc}"[:300])
        outcome.seconds = time.perf_counter() - start
        outcomes.append(outcome)
    return outcomes, counts


def _own_topics(log: pa.Table, spec: PipelineSpec) -> pa.Table:
    """The input log of the topics a pipeline reads (all the run's when it declares none)."""
    if not spec.topics:
        return log
    return log.filter(pc.is_in(log["topic"], pa.array(list(spec.topics), pa.string())))


def _input_count(run_dir, spec: PipelineSpec) -> int:
    """Input records in the pipeline's topics at its isolation level (0: none observed)."""
    try:
        return _own_topics(read_input_log(run_dir, spec.isolation), spec).num_rows
    except FileNotFoundError:
        return 0
