"""Spark's own failures (executor-kill, worker-kill) as the verdict sees them.

A kill of a pipeline's executor or worker concerns that pipeline's column and is
counted, like a driver kill's, from the batch planned and not committed at the kill
(the pipeline's checkpoint): a kill between batches acted on nothing. The start detail
(verifier.harness.faults.kinds.spark) says more: the task the killed executor ran (held
partway, its rows let through to the sink) and the executors lost with a worker.
"""

from __future__ import annotations

from functools import partial

from verifier.judge.faults import process
from verifier.judge.faults.family import Family

KINDS = ("executor-kill", "worker-kill")


def note(fault: str, detail: dict) -> str:
    """What the kill hit, as a clause for the exposure's ``what``."""
    task = detail.get("task") or {}
    who = f"executor {detail.get('executor')} of {detail.get('app')}"
    if fault == "worker-kill":
        lost = detail.get("executors_lost") or []
        who = f"{detail.get('worker')} with {len(lost)} executor(s)"
    if task.get("partition") is not None:
        return (f"; {who} ran task {task['partition']} attempt {task.get('attempt')} "
                f"(stage {task.get('stage')}) of batch {detail.get('batch')}, "
                f"{detail.get('rows_written')} rows of it written")
    return f"; {who}: no task known to run on it (no trigger)"


FAMILY = Family("spark", KINDS, process.concerns, partial(process.acted_on, note=note))
