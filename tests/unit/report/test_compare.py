"""Matrix cells, the delivered-guarantees summary and their renderings, on a recorded
matrix (fixtures/matrix.json: the shape verifier/report/matrix.py writes, with the counts
of issue 18's examples)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifier.report.compare import cell_text, cells, render_summary, summary
from verifier.report.html import render_html
from verifier.report.markdown import matrix_md, run_md
from verifier.report.matrix import matrix_html
from verifier.report.terminal import render_grid

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"


@pytest.fixture()
def matrix() -> dict:
    return json.loads(FIXTURE.read_text())


def test_cells_show_the_verdict_and_what_was_observed(matrix):
    c = cells(matrix["runs"])
    assert c["broker-pause"]["at-most-once"]["text"] == "PASS · 685 lost ~"
    assert c["ack-loss"]["at-least-once"]["text"] == "PASS · 1226 dup ~ 438 reorder ~"
    assert c["producer-kill"]["transactional@read_committed"]["text"] == "FAIL · 3 dup x"
    assert c["producer-kill"]["transactional@read_uncommitted"]["text"] == \
        "PASS · 10 xdup + 20 aborted +"
    assert c["baseline"]["idempotent"]["text"] == "PASS"


def test_a_scenario_run_twice_keeps_its_worst_verdict_and_adds_counts(matrix):
    runs = matrix["runs"]
    c = cells([runs[3], runs[3]])["producer-kill"]["transactional@read_committed"]
    assert c["text"] == "FAIL 2/2 · 6 dup x"  # each outcome counted (chaos --repeat)
    assert cell_text("UNKNOWN", []) == "UNKNOWN"


def test_terminal_grid_carries_the_cells(matrix):
    text = render_grid(matrix["grid"], matrix["runs"])
    row = next(line for line in text.splitlines() if line.startswith("ack-loss"))
    assert "PASS · 1226 dup ~ 438 reorder ~" in row
    assert "x forbidden" in text.splitlines()[-1]
    # without the runs: the plain verdict grid, as before
    assert "dup" not in render_grid(matrix["grid"])


def test_summary_per_mode_says_what_where_under_which_faults(matrix):
    by = {e["column"]: e for e in summary(matrix["runs"], matrix["workloads"])}
    lost = by["at-most-once"]["kinds"]["lost"]
    assert lost["count"] == 685 and lost["expectation"] == "tolerated"
    assert [(w["scenario"], w["faults"]) for w in lost["where"]] == \
        [("broker-pause", ["broker-pause"])]
    assert by["idempotent"]["kinds"]["duplicate-same-session"]["count"] == 0
    assert by["idempotent"]["kinds"]["duplicate-cross-session"]["count"] == 12
    assert by["at-least-once"]["kinds"]["aborted-read"]["expectation"] == "n/a"
    assert by["transactional@read_committed"]["kinds"]["duplicate-same-session"][
        "expectation"] == "forbidden"
    base = next(x for x in by["transactional@read_committed"]["load"]
                if x["scenario"] == "baseline")
    assert base["sent"] == 430 and base["requested"] == 4000
    assert base["rate"] == pytest.approx(21.5)
    text = render_summary(summary(matrix["runs"], matrix["workloads"]))
    assert "sent 430 of 4000 (11%), 22/s of 200/s" in text
    assert "685 ~: 685 in broker-pause" in text


def test_markdown_matrix_and_run(matrix):
    md = matrix_md(matrix)
    assert "| ack-loss | PASS | PASS · 1226 dup ~ 438 reorder ~ |" in md
    assert "[lost](#why-lost)" in md and 'id="why-lost"' in md
    assert 'id="why-torn-transaction"' not in md  # only what was observed is explained
    one = run_md(matrix["runs"][2])
    assert "| lost | 685 ~ |" in one


def test_matrix_html_links_counts_to_evidence_and_kinds_to_mechanisms(matrix, tmp_path):
    page = matrix_html(matrix["grid"], matrix["runs"], Path("runs/.."), matrix["workloads"])
    assert "id='guarantees'" in page and "id='why-lost'" in page
    assert "href='#why-lost'" in page
    assert "report.html#a-at-most-once-lost'" in page
    assert "22/s of 200/s" in page


def test_run_html_shows_samples_as_tables_linked_to_plots(matrix):
    doc = matrix["runs"][3]
    doc["partition_plots"] = [{"topic": "producer-kill-s1.transactional", "partition": 0,
                               "anomalous_offsets": [500], "points": [[500, "t", 100, 1, 40,
                                                                       True, True]]}]
    page = render_html(doc)
    assert "id='a-transactional-read-committed-duplicate-same-session'" in page
    assert "<table class='samples'>" in page
    assert "href='#p-producer-kill-s1-transactional-0'" in page
    assert "id='p-producer-kill-s1-transactional-0'" in page
    assert "transactional-0:0:100" in page


def test_exposure_text_sums_over_faults_and_runs_and_marks_a_miss():
    from verifier.report.compare import exposure_text

    hit = {"exercised": True, "faults": [{"acted": 3}, {"acted": 10}]}
    missed = {"exercised": False, "faults": [{"acted": 0}]}
    unmeasured = {"exercised": None, "faults": [{"acted": None}]}
    assert exposure_text([hit, hit]) == "exp 26"
    assert exposure_text([hit, missed]) == "exp 13 ✗"
    assert exposure_text([unmeasured]) == "exp 0?"
    assert exposure_text([{"exercised": True, "faults": []}]) == "no fault"
    assert exposure_text([None]) == ""  # a run recorded before exposure
