"""A consumer application under test judged from its input to its output topic (issue 47).

Pure: the input log (the run's topics at read_committed, as the plain reader read them
after the drain: what the group's instances should have consumed), the application's
output topic read back at one isolation level (decoded: the application passes each
record's value through, so its identity travels), and the group's committed offsets per
input partition in; one :class:`~verifier.judge.model.CheckOutcome` of the column
``app:<name>@<isolation>`` out, judged by the expectation table's row ``app/<claim>``.

The per-record judgement is the pipelines' (:func:`verifier.judge.pipeline.judge`: each
input record must be in the output as often as in the log; fewer copies are ``lost``,
more are ``duplicate-delivery``, an output record that is no input record is
``foreign-record``), with the group's committed offsets as the position: a missing record
below the offset the group committed is **lost** (no instance will read it again),
one at or above it **unseen** (the application had not got there). One kind is the
applications' own: **reorder**, records of one input partition whose first copies in one
output partition are not in their input order (a replayed copy is a duplicate, never a
reorder).

A share group (KIP-932) has no committed offset per partition: its position is the
share-partition start offset (every record below it acknowledged or archived). A record
missing from the output that an instance got at its last delivery attempt (its state
file's ``last_attempts``) was **archived** by the broker after the delivery-attempt limit:
a kind of its own (:func:`archived`), never lost.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute in judge_run

from verifier.judge.model import (
    ARCHIVED,
    DUP_DELIVERY,
    FOREIGN,
    LOST,
    REORDER,
    UNSEEN,
    CheckOutcome,
    Group,
)
from verifier.judge.pipeline import KEY, PipelineSpec, _row, _timeline
from verifier.judge.pipeline import judge as judge_records
from verifier.rundata.columns import APP_PREFIX

KINDS = (LOST, UNSEEN, DUP_DELIVERY, REORDER, FOREIGN, ARCHIVED)


@dataclass(frozen=True)
class AppSpec:
    """One application as config.json declares it (verifier.rundata.apps)."""

    name: str
    guarantee: str  # what it claims: at-most-once, at-least-once, exactly-once
    input_topics: tuple[str, ...] = ()
    output_topic: str = ""
    #: ``identity`` (per input record) or ``reference`` (an aggregate's final state per
    #: key against a fault-free run: verifier.judge.app_reference)
    oracle: str = "identity"
    #: the preset it is (None: the user's own command, whose values need not be counts)
    preset: str | None = None

    @property
    def label(self) -> str:
        return APP_PREFIX + self.name

    @property
    def expect(self) -> str:
        return f"app/{self.guarantee}"

    def column(self, isolation: str) -> str:
        return f"{self.label}@{isolation}"


def reordered(log: pa.Table, out: pa.Table, label: str, isolation: str) -> list[dict]:
    """Output records (``out``: with ``out_topic``, ``out_partition``, ``out_offset``)
    whose input record came earlier in its input partition than that of a record before
    it in the same output partition; first copies only."""
    where: dict[tuple, tuple] = {}
    for r in log.to_pylist():
        key, loc = tuple(r[k] for k in KEY), (r["topic"], r["partition"], r["offset"])
        if key not in where or loc < where[key]:
            where[key] = loc
    rows = [r for r in out.to_pylist() if r.get("out_offset") is not None]
    rows.sort(key=lambda r: (r["out_topic"], r["out_partition"], r["out_offset"]))
    seen: set[tuple] = set()
    highest: dict[tuple, tuple[int, int]] = {}  # (input tp, output tp) -> (in, out offset)
    spec = PipelineSpec(label, label, "", isolation)
    found = []
    for r in rows:
        key = tuple(r[k] for k in KEY)
        if r["foreign"] or key not in where or key in seen:
            continue
        seen.add(key)
        topic, part, offset = where[key]
        lane = (topic, part, r["out_topic"], r["out_partition"])
        before = highest.get(lane)
        if before is not None and offset < before[0]:
            found.append(_row(spec, REORDER, topic, dict(zip(KEY, key, strict=True)), offset, {
                "input": f"{topic}-{part}", "output": f"{r['out_topic']}-{r['out_partition']}",
                "output_offset": r["out_offset"], "after_input_offset": before[0],
                "after_output_offset": before[1],
                "why": "written after a record that came later in its input partition"}))
            continue
        highest[lane] = (offset, r["out_offset"])
    return found


def archived(log: pa.Table, out: pa.Table, last_attempts, label: str,
             isolation: str) -> tuple[pa.Table, list[dict]]:
    """(the input log without them, rows of kind ``archived``): the input records at a
    ``"topic-partition@offset"`` of ``last_attempts`` that are not in the output."""
    at = {tuple(x.rsplit("@", 1)) for x in last_attempts}
    if not at or log.num_rows == 0:
        return log, []
    written = {tuple(r[k] for k in KEY) for r in out.to_pylist() if not r.get("foreign")}
    spec = PipelineSpec(label, label, "", isolation)
    keep, found = [], []
    for r in log.to_pylist():
        key = tuple(r[k] for k in KEY)
        gone = (f"{r['topic']}-{r['partition']}", str(r["offset"])) in at and key not in written
        keep.append(not gone)
        if gone:
            found.append(_row(spec, ARCHIVED, r["topic"], dict(zip(KEY, key, strict=True)),
                              r["offset"], {"input": f"{r['topic']}-{r['partition']}",
                                            "why": "got at its last delivery attempt by an "
                                                   "instance that did not acknowledge it: "
                                                   "archived by the broker (KIP-932)"}))
    return log.filter(pa.array(keep, pa.bool_())), found


def judge(spec: AppSpec, isolation: str, log: pa.Table, out: pa.Table,
          committed: dict[str, int], run_id: str, cap: int = 20,
          last_attempts=()) -> tuple[CheckOutcome, dict]:
    """The column ``app:<name>@<isolation>``: its outcome and counts (``sent``: input
    records, ``observed``: output records read back at ``isolation``). ``committed``:
    the group's committed offset per input ``"topic-partition"`` after the instances
    stopped (a partition without one: every missing record of it is unseen); a share
    group's start offsets. ``last_attempts``: a share group's records got at their last
    delivery attempt (``"topic-partition@offset"``)."""
    column = spec.column(isolation)
    pspec = PipelineSpec(spec.name, spec.label, spec.expect, isolation)
    if "batch" not in out.column_names:
        out = out.append_column("batch", pa.nulls(out.num_rows, pa.int64()))
    sent = log.num_rows
    log, dropped = archived(log, out, last_attempts, spec.label, isolation)
    outcome, counts = judge_records(pspec, log, out, [], committed, run_id, cap,
                                    position=committed)
    counts["sent"] = sent
    if dropped:
        outcome.groups.append(Group(ARCHIVED, spec.label, isolation, len(dropped),
                                    dropped[:cap], _timeline(dropped)))
    moved = reordered(log, out, spec.label, isolation)
    if moved:
        outcome.groups.append(Group(REORDER, spec.label, isolation, len(moved), moved[:cap],
                                    _timeline(moved)))
    result = CheckOutcome(column, KINDS, groups=outcome.groups)
    return result, counts


def protocol_problem(info: dict) -> None:
    """Refuse to judge (UNKNOWN) a column of ``--group-protocol P`` whose group the broker
    described as another type: the column would be named for a protocol it did not run."""
    asked, seen = info.get("group_protocol"), info.get("group_type_seen")
    if asked and seen and seen != asked:
        raise ValueError(f"asked to run in a {asked} group, the broker describes its group "
                         f"as {seen}")


def group_offsets(committed: dict[str, int], topics) -> dict[str, int]:
    """The committed offsets of the input ``topics`` only (a group may hold others)."""
    want = set(topics)
    return {tp: off for tp, off in committed.items() if tp.rsplit("-", 1)[0] in want}


def by_kind(outcome: CheckOutcome) -> dict[str, int]:
    """{kind: count} of an outcome (a report's one-line summary of a cell)."""
    counts: dict[str, int] = defaultdict(int)
    for g in outcome.groups:
        counts[g.kind] += g.count
    return dict(counts)


__all__ = ["KINDS", "AppSpec", "archived", "by_kind", "group_offsets", "judge", "judge_run",
           "protocol_problem", "reordered"]


def judge_run(run_dir, config, cap: int = 20) -> tuple[list[CheckOutcome], dict]:
    """Every application of a run folder, both isolation levels: its outcomes (a check
    that cannot run, e.g. an output never read back, is UNKNOWN with its traceback) and
    counts keyed by its label."""
    import time
    import traceback

    from verifier.judge.pipeline import read_input_log
    from verifier.rundata.apps import AppLayout, read_readback
    from verifier.rundata.vocab import ISOLATIONS, READ_COMMITTED

    outcomes, counts = [], {}
    for spec in config.apps.values():
        c: dict = {}
        try:
            log = read_input_log(run_dir, READ_COMMITTED)  # what the group should read
            if spec.input_topics:
                log = log.filter(pa.compute.is_in(log["topic"], pa.array(
                    list(spec.input_topics), pa.string())))
        except Exception:  # noqa: BLE001 - judged below, UNKNOWN
            log = None
        if spec.oracle == "reference":
            from verifier.judge.app_reference import judge_run as judge_reference

            start = time.perf_counter()
            judged, counts[spec.label] = judge_reference(
                run_dir, spec, None if log is None else log.num_rows, cap)
            for o in judged:
                o.seconds = (time.perf_counter() - start) / len(judged)
            outcomes += judged
            continue
        for iso in ISOLATIONS:
            start = time.perf_counter()
            try:
                if log is None:
                    raise FileNotFoundError(f"no input observations in {run_dir}")
                out, info = read_readback(AppLayout(run_dir, spec.name), iso)
                protocol_problem(info)
                committed = group_offsets(info.get("committed") or {}, spec.input_topics)
                outcome, n = judge(spec, iso, log, out, committed, config.run, cap,
                                   last_attempts=info.get("last_attempts") or ())
                c["sent"] = n["sent"]
                c[f"observed_{iso}"] = n["observed"]
            except Exception as exc:  # noqa: BLE001 - a check that cannot run is UNKNOWN
                outcome = CheckOutcome(spec.column(iso), KINDS, error=traceback.format_exc(),
                                       summary=f"{type(exc).__name__}: {exc}"[:300])
            outcome.seconds = time.perf_counter() - start
            outcomes.append(outcome)
        counts[spec.label] = c
    return outcomes, counts
