"""The run table states each mode's achieved rate (sent records/s) against the workload's."""

from __future__ import annotations

import json
from pathlib import Path

import verifier.report.terminal as terminal
from verifier.report.markdown import run_md
from verifier.report.terminal import rate_row, render_terminal

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"


def baseline_doc() -> dict:
    """The recorded baseline run of issue 18 (20.5 s of load; 430 transactional sends)."""
    return json.loads(FIXTURE.read_text())["runs"][0]


def test_the_rate_row_follows_sent_with_the_workloads_rate(monkeypatch):
    monkeypatch.setattr(terminal, "workload", lambda doc: {"rate": 200.0})
    doc = baseline_doc()
    assert rate_row(doc) == ["sent/s (of 200)", "216", "234", "225", "21", "21"]
    lines = render_terminal(doc).splitlines()
    sent = next(i for i, line in enumerate(lines) if line.startswith("sent "))
    assert lines[sent + 1].startswith("sent/s (of 200)")
    assert "| sent/s (of 200) | 216 | 234 | 225 | 21 | 21 |" in run_md(doc)


def test_without_a_load_phase_there_is_no_rate_row():
    doc = baseline_doc()
    doc.pop("phases")
    assert rate_row(doc) is None
    assert "sent/s" not in render_terminal(doc)


def test_a_paced_idle_run_shows_its_rate_not_zero(monkeypatch):
    monkeypatch.setattr(terminal, "workload", lambda doc: {"rate": 0.125, "duration_s": 40})
    doc = baseline_doc()
    for col in doc["columns"]:
        col["counts"]["sent"] = 5
    assert rate_row(doc)[:2] == ["sent/s (of 0.125)", "0.12"]


def test_a_pipeline_is_asked_for_every_generators_records():
    """A pipeline reads every generator's topic: four generators at 40/s for 75 s ask it
    for 12,000 records, not 3,000 (a run printed "sent 53795 of 14579 (369%)")."""
    from verifier.report.compare import load_of, load_text

    work = {"rate": 40.0, "duration_s": 75, "producers": 4}
    pipeline = {"name": "pipeline:delta", "counts": {"sent": 11_400}}
    producer = {"name": "idempotent", "counts": {"sent": 2_850}}
    assert load_text(load_of({}, pipeline, work)).startswith("sent 11400 of 12000 (95%)")
    assert load_text(load_of({}, producer, work)).startswith("sent 2850 of 3000 (95%)")
