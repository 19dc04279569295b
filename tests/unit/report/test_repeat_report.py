"""A repeated scenario (``chaos --repeat N``) in every matrix output: the terminal grid,
the markdown grid, junit.xml (one case per cell with the count of each outcome) and
report.html show ``FAIL 2/3 · PASS 1/3``; a scenario run once shows its cells as before
(no "1/1"). Built on the recorded matrix of fixtures/matrix.json (issue 38)."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path

import pytest

from verifier.assess.outputs import combined
from verifier.judge.verdict import FAIL, NOT_EXERCISED, PASS
from verifier.report.compare import REPEAT_LEGEND, cells, outcome_text
from verifier.report.junit import render_junit
from verifier.report.markdown import matrix_md
from verifier.report.matrix import matrix_html
from verifier.report.terminal import render_grid

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"
TXN_RC = "transactional@read_committed"


@pytest.fixture()
def runs() -> dict[str, dict]:
    return {d["scenario"]: d for d in json.loads(FIXTURE.read_text())["runs"]}


def _repeat(doc: dict, verdicts: dict[str, list[str]], n: int) -> list[dict]:
    """``n`` runs of ``doc``'s scenario, as run_matrix collects them: each its own run id,
    folder and seed; ``verdicts`` column -> the verdict of each run (others as recorded)."""
    out = []
    for i in range(n):
        d = copy.deepcopy(doc)
        d["run"] = f"{doc['run']}-rep{i + 1}of{n}"
        d["run_dir"] = f"{doc['run_dir']}-rep{i + 1}of{n}"
        d["repetition"] = {"index": i + 1, "of": n, "seed": 1 + i}
        for c in d["columns"]:
            v = verdicts.get(c["name"], [c["verdict"]] * n)[i]
            c["verdict"] = v
            if v != FAIL:
                c["forbidden"] = []
            if v == NOT_EXERCISED:
                c["not_exercised"] = ["fault producer-kill #1 acted on none of its sends"]
                c["exposure"] = {"exercised": False, "faults": [
                    {"fault": "producer-kill", "id": 1, "acted": 0, "exercised": False}]}
        out.append(d)
    return out


@pytest.fixture()
def docs(runs) -> list[dict]:
    """baseline once, producer-kill three times: the transactional column failing in the
    first two, the idempotent one not exercised in the last."""
    return [runs["baseline"],
            *_repeat(runs["producer-kill"], {TXN_RC: [FAIL, FAIL, PASS],
                                             "idempotent": [PASS, PASS, NOT_EXERCISED]}, 3)]


def test_outcome_text_is_the_verdict_for_one_run_and_counts_for_several():
    assert outcome_text([PASS]) == "PASS"
    assert outcome_text([PASS, PASS]) == "PASS 2/2"
    assert outcome_text([PASS, NOT_EXERCISED, PASS]) == "NOT EXERCISED 1/3 · PASS 2/3"
    assert outcome_text([FAIL, FAIL, FAIL]) == "FAIL 3/3"


def test_a_repeated_cell_shows_each_outcome_and_the_summed_counts(docs):
    c = cells(docs)
    assert c["producer-kill"][TXN_RC]["text"] == "FAIL 2/3 · PASS 1/3 · 9 dup x"
    assert c["producer-kill"][TXN_RC]["verdict"] == FAIL
    assert c["producer-kill"]["idempotent"]["text"].startswith(  # then its exposure
        "NOT EXERCISED 1/3 · PASS 2/3 · 36 xdup ~")
    assert c["producer-kill"]["at-most-once"]["text"] == "PASS 3/3"
    assert c["producer-kill"]["at-most-once"]["runs"] == [d["run_dir"] for d in docs[1:]]
    assert c["baseline"]["at-most-once"]["text"] == "PASS"  # run once: no "1/1"


def test_the_terminal_and_markdown_grids_show_the_outcomes(docs):
    text = render_grid(combined(docs), docs)
    row = next(line for line in text.splitlines() if line.startswith("producer-kill"))
    assert "FAIL 2/3 · PASS 1/3 · 9 dup x" in row and "PASS 3/3" in row
    base = next(line for line in text.splitlines() if line.startswith("baseline"))
    assert "/" not in base.split(None, 1)[1]
    assert REPEAT_LEGEND in text
    assert REPEAT_LEGEND not in render_grid(combined(docs[:1]), docs[:1])
    md = matrix_md({"grid": combined(docs), "runs": docs, "exit_code": 1})
    assert "| FAIL 2/3 · PASS 1/3 · 9 dup x |" in md and REPEAT_LEGEND in md
    assert REPEAT_LEGEND not in matrix_md({"grid": combined(docs[:1]), "runs": docs[:1]})
    # a matrix document without runs still shows the counts from its outcomes
    bare = render_grid(combined(docs))
    assert "FAIL 2/3 · PASS 1/3" in bare and "NOT EXERCISED 1/3 · PASS 2/3" in bare


def test_junit_has_one_case_per_cell_with_the_count_of_each_outcome(docs):
    root = ET.fromstring(render_junit(docs))
    suites = {s.get("name"): s for s in root}
    assert list(suites) == ["baseline", "producer-kill"]  # one suite per scenario
    pk = suites["producer-kill"]
    cases = {c.get("name"): c for c in pk.findall("testcase")}
    assert set(cases) == {c["name"] for c in docs[1]["columns"]}
    assert (pk.get("tests"), pk.get("failures"), pk.get("errors"), pk.get("skipped")) == \
        ("5", "2", "0", "0")  # NOT EXERCISED is a failure of its own type (issue 49)

    txn = cases[TXN_RC]
    props = {p.get("name"): p.get("value") for p in txn.find("properties")}
    assert props == {"outcomes": "FAIL 2/3 · PASS 1/3", "FAIL": "2", "PASS": "1"}
    failures = txn.findall("failure")  # one per failing run, each saying which
    assert [f.get("message") for f in failures] == [
        "FAIL 2/3 · PASS 1/3: run 1/3 (seed 1): 3 duplicate-same-session "
        f"(forbidden for {TXN_RC})",
        "FAIL 2/3 · PASS 1/3: run 2/3 (seed 2): 3 duplicate-same-session "
        f"(forbidden for {TXN_RC})"]
    out = txn.find("system-out").text.splitlines()
    assert out[0] == "FAIL 2/3 · PASS 1/3"
    assert out[3] == f"run 3/3 (seed 3): PASS ({docs[3]['run_dir']})"

    idem = cases["idempotent"]
    missed = idem.find("failure")
    assert missed is not None and idem.find("skipped") is None
    assert missed.get("type") == "not-exercised"
    assert missed.get("message").startswith("NOT EXERCISED 1/3 · PASS 2/3: run 3/3 (seed 3): "
                                            "not exercised: fault producer-kill #1")
    assert {p.get("name"): p.get("value") for p in idem.find("properties")}["PASS"] == "2"
    runs = idem.find("system-out").text.splitlines()[1:]  # each run's line, its exposure
    assert runs[2].endswith("-rep3of3); exposure: producer-kill #1: 0 ✗"), runs
    assert "exposure" not in runs[0]  # a run recorded without exposure says nothing of it
    passing = cases["at-most-once"]
    assert list(passing.iter("failure")) + list(passing.iter("skipped")) == []
    # the scenario run once keeps its suite as before: no properties per case
    assert suites["baseline"].find("testcase/properties") is None


def test_the_html_grid_shows_the_outcomes_and_links_every_run(docs, tmp_path):
    page = matrix_html(combined(docs), docs, tmp_path)
    assert "<b>FAIL 2/3 · PASS 1/3</b>" in page
    assert "class='cell NOT-EXERCISED'" in page and "<b>NOT EXERCISED 1/3 · PASS 2/3</b>" in page
    for d in docs[1:]:  # each repetition's own report
        assert f"href='{d['run_dir']}/report.html'" in page
    assert "3 runs" in page and escape(REPEAT_LEGEND) in page
    # the run links may wrap between them: three runs of five columns fit 1280 px
    assert "#1&nbsp;FAIL</a> <a href=" in page
    # the exposure and the first run's link apart ("exp 3 #1 PASS", not "exp 3#1 PASS")
    assert re.search(r"</span> <span class='runs'>", page), page
    assert page.count("<tr id='s-producer-kill'>") == 1
    single = matrix_html(combined(docs[:1]), docs[:1], tmp_path)
    assert "<b>PASS</b>" in single and "1/1" not in single
    assert escape(REPEAT_LEGEND) not in single
