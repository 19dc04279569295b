"""Which writes made a pipeline's duplicate: the batch and task attempt of each copy.

A sink that says which task attempt wrote each row (the Kafka sink preset's record
headers: ``<stage>.<partition>.<attempt>``, streaming.pipelines.presets) lets the
evidence of a ``duplicate-delivery`` tell apart the two ways Spark writes a record twice:

- a **task retry**: two attempts of one task (the same batch, stage and partition, other
  attempt numbers): the executor running the first was lost after it had written part of
  its rows, and Spark re-ran the task on another one (a sink without a commit protocol
  for its tasks keeps both writes);
- a **batch replay**: the same batch written by two runs of it (another stage, the first
  attempt each): the driver died before it committed the batch and re-ran it from its
  checkpoint.

Pure: the copies' (batch, task) pairs in, evidence fields out.
"""

from __future__ import annotations

TASK_RETRY, BATCH_REPLAY = "task retry", "batch replay"


def parse_task(task: str) -> tuple[int, int, int] | None:
    """``"<stage>.<partition>.<attempt>"`` as numbers; None when it is not one."""
    parts = str(task).split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    stage, partition, attempt = (int(p) for p in parts)
    return stage, partition, attempt


def cause(copies: list[tuple[int | None, str | None]]) -> str | None:
    """How the copies came about: TASK_RETRY when two of them are attempts of one task,
    BATCH_REPLAY when two come from one batch's separate runs, else None (unknown)."""
    tasks = []
    for batch, task in copies:
        parsed = parse_task(task) if task is not None else None
        if parsed is not None:
            tasks.append((batch, parsed))
    seen: dict[tuple, set[int]] = {}
    for batch, (stage, partition, attempt) in tasks:
        seen.setdefault((batch, stage, partition), set()).add(attempt)
    if any(len(attempts) > 1 for attempts in seen.values()):
        return TASK_RETRY
    runs: dict[int | None, set[int]] = {}
    for batch, (stage, _, _) in tasks:
        runs.setdefault(batch, set()).add(stage)
    if any(b is not None and len(stages) > 1 for b, stages in runs.items()):
        return BATCH_REPLAY
    return None


def evidence(copies: list[tuple[int | None, str | None]]) -> dict:
    """Evidence fields for a record's copies: each copy as "batch B task P attempt A
    (stage S)", and the cause when the copies show it."""
    said = []
    for batch, task in copies:
        parsed = parse_task(task) if task is not None else None
        if parsed is None:
            continue
        stage, partition, attempt = parsed
        said.append(f"batch {batch} task {partition} attempt {attempt} (stage {stage})")
    if not said:
        return {}
    out: dict = {"output_tasks": sorted(said)}
    why = cause(copies)
    if why is not None:
        out["cause"] = why
    return out


__all__ = ["BATCH_REPLAY", "TASK_RETRY", "cause", "evidence", "parse_task"]
