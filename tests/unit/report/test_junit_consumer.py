"""junit.xml as a CI dashboard reads it (issue 49): a NOT EXERCISED cell must show as a
failure, because the run exits 3; it was a skipped case, a green dashboard beside a red
job. Read by junitparser, a JUnit consumer from PyPI (the dev extra pins it), not by our
own parser, so the test holds what a consumer sees."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from verifier.assess.exitcodes import set_run
from verifier.assess.finish import mark_skipped
from verifier.judge.verdict import apply_exposure
from verifier.report.junit import write_junit
from verifier.rundata.vocab import EXIT_NOT_EXERCISED, JUNIT_NOT_EXERCISED, VERDICTS

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"
MISSED = "producer-kill #1: acted on none of this column's operations"


@pytest.fixture()
def docs() -> list[dict]:
    return copy.deepcopy(json.loads(FIXTURE.read_text())["runs"])


def _cases(path: Path) -> dict[tuple[str, str], object]:
    xml = JUnitXml.fromfile(str(path))
    return {(suite.name, case.name): case for suite in xml for case in suite}


def test_a_not_exercised_cell_is_a_failure_to_a_junit_consumer(docs, tmp_path):
    ack = next(d for d in docs if d["scenario"] == "ack-loss")
    apply_exposure(ack, {"idempotent": {"exercised": False, "reasons": [MISSED]}})
    assert set_run(ack) == EXIT_NOT_EXERCISED  # the run's exit code: 3
    cases = _cases(write_junit([ack], tmp_path / "junit.xml"))

    case = cases[("ack-loss", "idempotent")]
    assert not case.is_passed and not case.is_skipped
    [failure] = case.result
    assert isinstance(failure, Failure)
    assert failure.type == JUNIT_NOT_EXERCISED == "not-exercised"
    assert MISSED in failure.message
    # the other columns of the run were exercised: they pass
    assert all(c.is_passed for (s, n), c in cases.items() if n != "idempotent")
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "junit.xml"))))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 1, 0, 0)


def test_each_verdict_gets_the_element_the_table_names(docs, tmp_path):
    """PASS passes, FAIL and NOT EXERCISED fail, UNKNOWN errs, SKIPPED is skipped: the
    element of each verdict as the one table (vocab.VERDICTS) says, as a consumer reads it."""
    by_name = {d["scenario"]: d for d in docs}
    apply_exposure(by_name["ack-loss"], {"idempotent": {"exercised": False, "reasons": [MISSED]}})
    mark_skipped(by_name["broker-pause"], ["broker-pause (the external environment cannot run it)"])
    base = by_name["baseline"]["columns"][0]
    base.update(verdict="UNKNOWN", reasons=["check lost crashed: boom"])
    cases = _cases(write_junit(docs, tmp_path / "junit.xml"))
    element = {Failure: "failure", Error: "error", Skipped: "skipped"}
    seen = {}
    for doc in docs:
        for col in doc["columns"]:
            case = cases[(doc["scenario"], col["name"])]
            kinds = {element[type(r)] for r in case.result}
            seen.setdefault(col["verdict"], set()).update(kinds or {None})
    want = {v.name: {v.junit} for v in VERDICTS}
    assert seen == want, seen
