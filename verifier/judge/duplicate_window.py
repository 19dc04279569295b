"""The duplicate window of a pipeline under driver kills, against its trigger (issue 46).

Spark's real-time mode (4.1+) commits a batch's offsets at its end, after its records
were written as they came; a driver killed inside a batch restarts from the last commit
and writes again what the batch had written. The window grows with the trigger's
duration, a micro-batch's with its batch. Each pipeline column of a run whose driver was
killed gets ``duplicate_window`` in verdict.json:

    {"trigger": "real-time", "trigger_ms": 10000, "kills": 2, "rewritten": 1234,
     "per_kill": 617.0}

``trigger``/``trigger_ms``: what its driver's query ran on (``RUN/pipelines/<name>/
ready.json``, written by streaming.pipelines.driver); ``kills``: the kills of its driver
that were applied (process-kill, checkpoint-lost); ``rewritten``: the records its output
holds more than once (``duplicate-delivery``); ``per_kill``: their mean per kill.
"""

from __future__ import annotations

from pathlib import Path

from verifier.rundata.columns import PIPELINE_PREFIX
from verifier.rundata.pipelines import PipelineLayout

#: the faults that kill a pipeline's driver (its restart replays the batch in flight)
DRIVER_KILLS = ("process-kill", "checkpoint-lost")


def read_trigger(run_dir: Path, name: str) -> dict | None:
    """The trigger the pipeline's driver said it runs on, or None (an older run)."""
    import orjson

    try:
        ready = orjson.loads(PipelineLayout(Path(run_dir), name).ready.read_bytes())
    except (OSError, ValueError):
        return None
    trigger = ready.get("trigger") if isinstance(ready, dict) else None
    return trigger if isinstance(trigger, dict) and trigger.get("kind") else None


def window(col: dict, trigger: dict) -> dict:
    """The ``duplicate_window`` entry of one pipeline column (pure)."""
    faults = (col.get("exposure") or {}).get("faults") or []
    kills = sum(1 for f in faults if f.get("fault") in DRIVER_KILLS and f.get("applied"))
    dup = (col.get("anomalies") or {}).get("duplicate-delivery") or {}
    rewritten = int(dup.get("count") or 0)
    return {"trigger": trigger["kind"], "trigger_ms": trigger.get("ms"), "kills": kills,
            "rewritten": rewritten,
            "per_kill": round(rewritten / kills, 1) if kills else None}


def add_duplicate_windows(doc: dict, run_dir: Path | None) -> None:
    """Each pipeline column's ``duplicate_window`` (its exposure must be in already)."""
    if run_dir is None:
        return
    for c in doc["columns"]:
        if not c["name"].startswith(PIPELINE_PREFIX):
            continue
        trigger = read_trigger(run_dir, c["name"][len(PIPELINE_PREFIX):])
        if trigger is not None:
            c["duplicate_window"] = window(c, trigger)


def _trigger_text(w: dict) -> str:
    ms = w.get("trigger_ms")
    every = f"{ms / 1000:g} s" if isinstance(ms, int | float) and ms > 0 else "as fast as it can"
    if w["trigger"] == "real-time":
        return f"real-time trigger, batches of {every}"
    if w["trigger"] == "processing-time":
        return f"micro-batch trigger, every {every}"
    return f"{w['trigger']} trigger"


def window_lines(doc: dict) -> list[str]:
    """One line per killed pipeline column, when one of the run's pipelines ran on the
    real-time trigger: its trigger, kills and records written again per kill."""
    shown = [c for c in doc["columns"] if (c.get("duplicate_window") or {}).get("kills")]
    if not any(c["duplicate_window"]["trigger"] == "real-time" for c in shown):
        return []
    lines = []
    for c in shown:
        w = c["duplicate_window"]
        lines.append(f"{c['name']}: {_trigger_text(w)}: {w['kills']} kill(s), "
                     f"{w['rewritten']} records written again ({w['per_kill']:g} per kill)")
    return lines


def window_rows(doc: dict) -> list[list[str]]:
    """report.html's table of the same (header first; empty when there is none)."""
    shown = [c for c in doc["columns"] if (c.get("duplicate_window") or {}).get("kills")]
    if not any(c["duplicate_window"]["trigger"] == "real-time" for c in shown):
        return []
    rows = [["column", "trigger", "kills", "records written again", "per kill"]]
    for c in shown:
        w = c["duplicate_window"]
        rows.append([c["name"], _trigger_text(w), str(w["kills"]), str(w["rewritten"]),
                     f"{w['per_kill']:g}"])
    return rows


__all__ = ["DRIVER_KILLS", "add_duplicate_windows", "read_trigger", "window",
           "window_lines", "window_rows"]
