"""Skipped faults are a verdict (issue 17): a scenario whose faults did not run is
SKIPPED in the grid, in junit.xml (a skipped test case with the reason), in report.html
and on the terminal; a matrix in which everything was skipped does not exit 0."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from verifier.assess.exitcodes import of_verdicts
from verifier.assess.finish import mark_skipped
from verifier.assess.outputs import combined
from verifier.judge.verdict import SKIPPED
from verifier.report.html import render_html
from verifier.report.junit import render_junit
from verifier.report.matrix import matrix_html
from verifier.report.terminal import render_grid, render_terminal

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"
WHY = ["broker-kill (the external environment cannot run it)"]


@pytest.fixture()
def docs() -> list[dict]:
    return copy.deepcopy(json.loads(FIXTURE.read_text())["runs"])


def _doc(docs, scenario):
    return next(d for d in docs if d["scenario"] == scenario)


def test_passing_columns_of_a_scenario_whose_faults_did_not_run_are_skipped(docs):
    doc = _doc(docs, "broker-pause")
    before = {c["name"]: c["verdict"] for c in doc["columns"]}
    mark_skipped(doc, WHY)
    for c in doc["columns"]:
        want = SKIPPED if before[c["name"]] == "PASS" else before[c["name"]]
        assert c["verdict"] == want  # a FAIL or UNKNOWN is left as it is
    assert doc["skipped_faults"] == WHY


def test_a_scenario_without_skipped_faults_is_untouched(docs):
    doc = _doc(docs, "baseline")
    before = copy.deepcopy(doc)
    mark_skipped(doc, [])
    assert doc == before


def test_exit_codes_with_skipped():
    assert of_verdicts([SKIPPED, SKIPPED]) == 2  # nothing was shown: not a pass
    assert of_verdicts([]) == 2
    assert of_verdicts(["PASS", SKIPPED]) == 0
    assert of_verdicts(["UNKNOWN", SKIPPED]) == 2
    assert of_verdicts(["FAIL", SKIPPED]) == 1


def test_grid_junit_html_and_terminal_say_skipped(docs, tmp_path):
    for doc in docs:
        if doc["scenario"] != "baseline":
            mark_skipped(doc, WHY)
    doc = _doc(docs, "broker-pause")
    skipped_cols = [c["name"] for c in doc["columns"] if c["verdict"] == SKIPPED]
    assert skipped_cols
    grid = combined(docs)
    assert grid["grid"]["broker-pause"][skipped_cols[0]] == SKIPPED
    assert SKIPPED in render_grid(grid, docs)
    assert "cell SKIPPED" in matrix_html(grid, docs, tmp_path)

    root = ET.fromstring(render_junit(docs))
    suite = next(s for s in root if s.get("name") == "broker-pause")
    assert suite.get("skipped") == str(len(skipped_cols))
    case = next(c for c in suite if c.get("name") == skipped_cols[0])
    skipped = case.find("skipped")
    assert skipped is not None and "broker-kill" in skipped.get("message")
    assert case.find("failure") is None and case.find("error") is None

    assert "SKIPPED because" in render_html(doc)
    assert f"{skipped_cols[0]}: SKIPPED because" in render_terminal(doc)


def test_a_matrix_where_everything_was_skipped_does_not_exit_0(docs):
    for doc in docs:
        for c in doc["columns"]:
            c["verdict"] = "PASS"
            c["forbidden"] = []
        mark_skipped(doc, WHY)
    assert combined(docs)["exit_code"] == 2
