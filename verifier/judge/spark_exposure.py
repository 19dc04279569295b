"""What an executor or worker kill acted on, said from its start detail (pure).

The exposure of a kill of a pipeline's executor or worker (verifier.judge.exposure)
counts, like a driver kill's, the records of the batch planned and not committed at the
kill (the pipeline's checkpoint): a kill between batches acted on nothing. The start
detail (verifier.harness.faults.spark_faults) says more: the task the killed executor ran
(held partway, its rows let through to the sink) and the executors lost with a worker.
"""

from __future__ import annotations

SPARK_FAULTS = ("executor-kill", "worker-kill")


def note(fault: str, detail: dict) -> str:
    """What the kill hit, as a clause for the exposure's ``what`` ("" for other faults)."""
    if fault not in SPARK_FAULTS:
        return ""
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


__all__ = ["SPARK_FAULTS", "note"]
