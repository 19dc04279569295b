"""The matrix page fits its window: the fault lines are a row folded under each scenario,
not a column (a column of them ran off the right edge at 1400 px), and a column name may
break after its '@'. Checked by eye in headless Chromium at 1280 and 1400 px."""

from __future__ import annotations

import json
from pathlib import Path

from verifier.report.matrix import matrix_html

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"


def test_fault_lines_fold_under_their_scenario():
    matrix = json.loads(FIXTURE.read_text())
    run = next(r for r in matrix["runs"] if r["scenario"] == "ack-loss")
    run["fault_summary"] = ["ack-loss on every broker: fired, 70 of 898 responses hit"]
    page = matrix_html(matrix["grid"], matrix["runs"], Path("runs"), matrix["workloads"])
    assert "<th>faults</th>" not in page
    head = page[page.index("<table id='grid'>"):page.index("</tr>", page.index("<table"))]
    assert head.count("<th>") == len(matrix["grid"]["columns"]) + 2  # scenario, wall time
    row = page[page.index("<tr id='s-ack-loss'>"):]
    folded = row[row.index("<tr class='faults'>"):row.index("</tr>", row.index("faults'>"))]
    assert "<details><summary>faults: " in folded
    assert "70 of 898 responses hit" in folded
    assert f"colspan={len(matrix['grid']['columns']) + 1}" in folded
    assert "transactional@<wbr>read_<wbr>committed" in page


def test_what_a_cell_observed_may_wrap():
    """A cell's observed kinds wrap inside their column: unbroken, '658
    duplicate-same-session ~' in a sixth column (a user's producer file) pushed the wall
    time column off a 1280-px window, seen in headless Chromium (2026-11-28)."""
    import re

    from verifier.report.matrix import CSS

    (rule,) = re.findall(r"\.obs\{([^}]*)\}", CSS)
    assert "nowrap" not in rule, rule


def test_each_cell_shows_its_exposure_as_the_legend_says():
    """The legend explains "exp N"; the terminal cell shows it, and so must the page's
    (the quick profile's page had the legend and no "exp" in any cell, 2026-11-28)."""
    matrix = json.loads(FIXTURE.read_text())
    run = next(r for r in matrix["runs"] if r["scenario"] == "ack-loss")
    col = run["columns"][0]
    col["exposure"] = {"exercised": True, "faults": [{"fault": "ack-loss", "acted": 36}]}
    page = matrix_html(matrix["grid"], matrix["runs"], Path("runs"), matrix["workloads"])
    row = page[page.index("<tr id='s-ack-loss'>"):page.index("<tr class='faults'>",
                                                               page.index("s-ack-loss"))]
    assert "<span class='f exp'>exp 36</span>" in row
    assert "exp N" in page  # the legend
