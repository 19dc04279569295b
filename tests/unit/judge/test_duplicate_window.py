"""The duplicate window per kill of a pipeline, against its trigger (issue 46): what
verdict.json, the terminal and report.html say of real-time mode beside micro-batch."""

from __future__ import annotations

import orjson

from verifier.judge.duplicate_window import (
    add_duplicate_windows,
    window,
    window_lines,
    window_rows,
)


def _col(name: str, dups: int, kills: list[bool]) -> dict:
    return {"name": f"pipeline:{name}",
            "anomalies": {"duplicate-delivery": {"count": dups}, "lost": {"count": 0}},
            "exposure": {"faults": [{"fault": "process-kill", "applied": a, "acted": 3}
                                    for a in kills]
                         + [{"fault": "broker-kill", "applied": True, "acted": 9}]}}


def _ready(run, name: str, trigger: dict) -> None:
    folder = run / "pipelines" / name
    folder.mkdir(parents=True)
    (folder / "ready.json").write_bytes(orjson.dumps({"pid": 1, "t": 0.0,
                                                      "trigger": trigger}))


REAL_TIME = {"kind": "real-time", "ms": 10_000, "text": "10 seconds"}
MICRO = {"kind": "processing-time", "ms": 1000, "text": "1 second"}


def test_records_written_again_per_applied_driver_kill():
    w = window(_col("rt", 1000, [True, True, False]), REAL_TIME)
    # the kill not applied and the broker's kill do not count
    assert w == {"trigger": "real-time", "trigger_ms": 10_000, "kills": 2,
                 "rewritten": 1000, "per_kill": 500.0}
    assert window(_col("rt", 0, []), REAL_TIME)["per_kill"] is None


def test_each_pipeline_column_gets_its_window_from_its_drivers_trigger(tmp_path):
    _ready(tmp_path, "rt", REAL_TIME)
    _ready(tmp_path, "rt-micro-batch", MICRO)
    doc = {"columns": [{"name": "idempotent"}, _col("rt", 960, [True, True]),
                       _col("rt-micro-batch", 130, [True, True]), _col("old", 5, [True])]}
    add_duplicate_windows(doc, tmp_path)
    by = {c["name"]: c.get("duplicate_window") for c in doc["columns"]}
    assert by["pipeline:rt"]["per_kill"] == 480.0
    assert by["pipeline:rt-micro-batch"]["trigger"] == "processing-time"
    assert by["idempotent"] is None and by["pipeline:old"] is None  # no trigger recorded
    lines = window_lines(doc)
    assert lines == [
        "pipeline:rt: real-time trigger, batches of 10 s: 2 kill(s), 960 records written "
        "again (480 per kill)",
        "pipeline:rt-micro-batch: micro-batch trigger, every 1 s: 2 kill(s), 130 records "
        "written again (65 per kill)"]
    rows = window_rows(doc)
    assert rows[0][0] == "column" and rows[1][-1] == "480" and len(rows) == 3


def test_said_only_when_a_pipeline_ran_in_real_time_mode(tmp_path):
    _ready(tmp_path, "delta", MICRO)
    doc = {"columns": [_col("delta", 0, [True, True])]}
    add_duplicate_windows(doc, tmp_path)
    assert doc["columns"][0]["duplicate_window"]["kills"] == 2
    assert window_lines(doc) == [] and window_rows(doc) == []
