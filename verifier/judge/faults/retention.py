"""The retention fault as the verdict sees it: the run's topics keep records seconds only.

It concerns the pipelines under test, whose unread records it deletes (never a producer
column: the log, not the producer, lost them). What it acted on: the records retention
deleted in the window that the pipeline had not committed when it began.
"""

from __future__ import annotations

from verifier.judge.faults.facts import Batch, ColumnSpec, RunFacts
from verifier.judge.faults.family import PIPELINE_PREFIX, Family
from verifier.judge.faults.windows import Window


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    return col.pipeline is not None


def deleted_unread(w: Window, batches: list[Batch],
                   final: dict[str, int] | None = None) -> tuple[int | None, str]:
    """Records retention deleted in the window that the pipeline had not committed when
    it began: per partition from the larger of its committed position and the log start
    then, up to the log start at the heal (the nemesis's start and heal details) or after
    the drain, whichever is larger: segments the window's retention made eligible can go
    after the heal has read the log start (the judge's ``lost`` uses the drain's)."""
    before, heal = w.start_detail.get("log_start"), w.heal_detail.get("log_start")
    if before is None or heal is None:
        return None, "log start offsets not recorded"
    after = {tp: max(int(gone), (final or {}).get(tp, 0)) for tp, gone in heal.items()}
    position: dict[str, int] = {}
    for b in batches:
        if b.committed is not None and b.committed <= (w.start or 0):
            for (topic, part), (_, end) in b.ranges.items():
                key = f"{topic}-{part}"
                position[key] = max(position.get(key, 0), end)
    n = sum(max(0, int(gone) - max(position.get(tp, 0), int(before.get(tp, 0))))
            for tp, gone in after.items())
    return n, "records deleted by retention before the pipeline read them"


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    return deleted_unread(w, facts.batches.get(f"{PIPELINE_PREFIX}{col.pipeline}", []),
                          facts.log_start)


FAMILY = Family("retention", ("retention",), concerns, acted_on)
