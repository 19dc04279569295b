"""`chaos --selftest`: the self-test's table in report.html, the matrix, junit.xml and
markdown, from the section a run's verdict document carries (RUN/selftest.json)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from verifier.judge.selftest import SelfTestResult, SelfTestRow
from verifier.report.html import render_html
from verifier.report.junit import render_junit
from verifier.report.markdown import run_md
from verifier.report.matrix import matrix_html
from verifier.report.selftest import headline

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"


def recorded_docs() -> list[dict]:
    """The run documents of a recorded matrix (fixtures/matrix.json)."""
    return json.loads(FIXTURE.read_text())["runs"]


def _section(ok: bool = True) -> dict:
    rows = [SelfTestRow("lost", "lost", "t.idempotent-0@7", True, True),
            SelfTestRow("marker-gap", "legal", "t.transactional-1@12", True, True),
            SelfTestRow("reorder", "reorder", "t.at-least-once-2@3", ok, True,
                        missed=[] if ok else ["reorder at-least-once@read_committed seq 9"],
                        false_alarms=[] if ok else ["lost idempotent@read_committed +1"])]
    return SelfTestResult("runs/x", 1, rows, ["hanging-transaction: no suitable record"],
                          {"idempotent": "PASS"}).as_json()


def test_headline_counts_rows_and_says_why_a_run_was_not_tested():
    assert headline(_section()) == "3/3 mutations as expected: PASS"
    assert headline(_section(ok=False)) == "2/3 mutations as expected: FAIL"
    assert headline({"error": "the run did not complete: nothing to mutate"}).startswith(
        "self-test not run: the run did not complete")
    assert headline(None) == ""


def test_run_report_shows_the_table_with_misses_and_false_alarms():
    doc = {**recorded_docs()[0], "selftest": _section(ok=False)}
    page = render_html(doc)
    assert "Self-test: would these checks have caught it?" in page
    assert "2/3 mutations as expected: FAIL" in page
    assert "reorder at t.at-least-once-2@3" in page and "legal: t.transactional-1@12" in page
    assert "lost idempotent@read_committed +1" in page  # the false alarm is named
    assert "missed reorder at-least-once@read_committed seq 9" in page
    assert "hanging-transaction: no suitable record" in page
    assert "Self-test" not in render_html(recorded_docs()[0])  # not self-tested: no section
    md = run_md(doc)
    assert f"`{doc['scenario']}`: 2/3 mutations as expected: FAIL" in md


def test_junit_has_a_selftest_case_that_fails_when_a_mutation_was_missed():
    docs = recorded_docs()
    good = {**docs[0], "selftest": _section()}
    bad = {**docs[1], "selftest": _section(ok=False)}
    root = ET.fromstring(render_junit([good, bad]))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    g, b = suites[good["scenario"]], suites[bad["scenario"]]
    assert g.get("tests") == str(len(good["columns"]) + 1)
    case = g.find("testcase[@name='selftest']")
    assert case is not None and case.find("failure") is None
    bcase = b.find("testcase[@name='selftest']")
    assert bcase.find("failure").get("message") == "1 of 3 mutations not as expected"
    assert int(b.get("failures")) == sum(c["verdict"] == "FAIL" for c in bad["columns"]) + 1


def test_matrix_report_has_one_row_per_mutation_and_one_column_per_run(tmp_path):
    from verifier.assess.outputs import combined

    docs = recorded_docs()
    docs = [{**docs[0], "selftest": _section()}, {**docs[1], "selftest": _section(ok=False)},
            *docs[2:]]  # fmt: skip
    page = matrix_html(combined(docs), docs, Path(tmp_path))
    table = page[page.index("id='selftest-matrix'"):]
    assert table.count("<tr>") == 1 + 3 + 1  # head, three mutations, result
    assert "no alarm" in table and "caught" in table and ">NO</td>" in table
    assert "3/3 mutations as expected: PASS" in table
    assert "2/3 mutations as expected: FAIL" in table
