"""The live checks as the run goes: the progress line's anomaly counts and ``--fail-fast``
(:func:`pace_load`: the load paced for its duration, cut short at a forbidden anomaly).

Reads the observer's live summaries (``RUN/anomalies/<isolation>/summary.json``, replaced
after every batch) and judges each count against the expectation table, per report
column (a transactional mode has one per isolation level, as in the verdict).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from verifier.judge import expectations as X
from verifier.judge.model import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    ISOLATIONS,
    REORDER,
)  # fmt: skip
from verifier.rundata.columns import column_name
from verifier.rundata.layout import RunLayout

#: the progress line's short names (those of the verdict grid)
SHORT = {DUP_SAME: "dup", DUP_CROSS: "xdup", DUP_DELIVERY: "delivery dup",
         REORDER: "reorder", ABORTED_READ: "aborted", FOREIGN: "foreign"}  # fmt: skip


@dataclass
class ColumnCounts:
    """One report column's live anomalies so far, by table entry."""

    name: str
    forbidden: dict[str, int] = field(default_factory=dict)
    allowed: dict[tuple[str, str], int] = field(default_factory=dict)  # (kind, entry)

    def line(self) -> str:
        if self.forbidden:
            what = ", ".join(f"{n} {SHORT.get(k, k)}" for k, n in sorted(self.forbidden.items()))
            return f"{self.name}: {sum(self.forbidden.values())} FORBIDDEN ({what})"
        more = "; ".join(f"{n} {SHORT.get(k, k)} ({e})"
                         for (k, e), n in sorted(self.allowed.items()))  # fmt: skip
        return f"{self.name}: 0 forbidden so far" + (f"; {more}" if more else "")


def column_counts(run_dir: Path, producers: list, sink: str) -> list[ColumnCounts] | None:
    """Per column, the live counts; ``producers``: objects with pid, mode, expect and
    topic (the run's plans). None before the observer's first batch (or without live
    checks)."""
    from streaming.live import read_summary

    summaries = {iso: read_summary(run_dir, iso) for iso in ISOLATIONS}
    if not any(summaries.values()):
        return None
    return judge_counts(summaries, producers, sink)


def judge_counts(summaries: dict, producers: list, sink: str) -> list[ColumnCounts]:
    """Per column, ``summaries`` ({isolation: {"anomalies": {owner: {kind: n}}}}) judged
    by the expectation table."""
    cols: dict[str, ColumnCounts] = {}
    for p in producers:
        names = {iso: column_name(p.mode, p.expect, iso, short=True) for iso in ISOLATIONS}
        for name in names.values():
            cols.setdefault(name, ColumnCounts(name))
        for iso, summary in summaries.items():
            by_kind = {}
            for owner in (p.pid, f"topic:{p.topic}"):
                for k, n in ((summary or {}).get("anomalies", {}).get(owner) or {}).items():
                    by_kind[k] = by_kind.get(k, 0) + n
            col = cols[names[iso]]
            for kind, n in by_kind.items():
                entry = _entry(p.expect, iso, kind, sink)
                if entry == X.FORBIDDEN:
                    col.forbidden[kind] = col.forbidden.get(kind, 0) + n
                else:
                    col.allowed[(kind, entry)] = col.allowed.get((kind, entry), 0) + n
    return list(cols.values())


def _entry(expect: str, isolation: str, kind: str, sink: str) -> str:
    try:
        return X.expectation(expect, isolation, kind, sink)
    except KeyError:  # a user's label without a preset: judge it as the strictest
        return X.FORBIDDEN


def live_line(run_dir: Path, producers: list, sink: str) -> str:
    """``idempotent: 0 forbidden so far; at-least-once: 0 forbidden so far; 312 dup
    (tolerated)``, or a note while the observer has judged nothing yet."""
    cols = column_counts(run_dir, producers, sink)
    if cols is None:
        # Spark writes a query's checkpoint metadata when the query starts: until then
        # the observer's JVM is still starting (~20 s here); it reads from the earliest
        # offsets, so what is sent meanwhile is judged all the same
        where = RunLayout(run_dir)
        if not any((where.checkpoint(iso) / "metadata").exists() for iso in ISOLATIONS):
            return "live checks: observer starting (Spark), it reads from the first offset"
        return "live checks: no batch yet"
    return "; ".join(c.line() for c in cols)


def forbidden_so_far(run_dir: Path, producers: list, sink: str) -> list[str]:
    """The columns with a forbidden live anomaly, each as its progress text (empty: none)."""
    return [c.line() for c in column_counts(run_dir, producers, sink) or [] if c.forbidden]


def pace_load(run) -> bool:
    """Let the load of ``run`` (a ScenarioRun) run the scenario's duration; with
    ``--fail-fast``, look at the live checks once a second and return True at the first
    forbidden anomaly (``run.stopped_early`` and a note say which)."""
    end = time.monotonic() + run.scenario.workload.duration_s
    pause = threading.Event()
    while (left := end - time.monotonic()) > 0:
        found = (forbidden_so_far(run.run_dir, run.plans, run.sink)
                 if run.opts.fail_fast else [])
        if found:
            run.stopped_early = "; ".join(found)
            run.notes.append(f"--fail-fast: the load stopped after "
                             f"{run.scenario.workload.duration_s - left:.0f} s of "
                             f"{run.scenario.workload.duration_s:g} s at a forbidden "
                             f"anomaly the live checks reported: {run.stopped_early}")
            return True
        pause.wait(min(1.0, left))
    return False
