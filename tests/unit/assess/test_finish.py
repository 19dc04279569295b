"""The one function that finishes a verdict document (verifier.assess.finish) and the one
module that sets exit codes (verifier.assess.exitcodes), on hand-made documents: the
order of the marks, the input left as it was, the exit code set once from the result."""

from __future__ import annotations

import copy
from pathlib import Path

from verifier.assess import exitcodes as X
from verifier.assess.facts import RunFacts
from verifier.assess.finish import CrossCheck, Ending, Judged, finish
from verifier.rundata.vocab import (
    EXIT_ANOMALY,
    EXIT_INCOMPLETE,
    EXIT_NOT_EXERCISED,
    EXIT_OK,
    FAIL,
    NOT_EXERCISED,
    PASS,
    SKIPPED,
    UNKNOWN,
)

MISSED = {"exercised": False, "faults": [], "reasons": ["ack-loss #1 acted on none"]}
HIT = {"exercised": True, "faults": [], "reasons": []}


def _built(**verdicts: str) -> dict:
    cols = [{"name": n, "mode": n, "isolations": ["read_committed"], "verdict": v,
             "forbidden": ["lost"] if v == FAIL else [], "reasons": []}
            for n, v in verdicts.items()]
    return {"scenario": "s", "run": "r", "faults": [], "columns": cols}


def _facts(tmp_path: Path, exposure: dict, interrupted: str | None = None,
           connections: dict | None = None) -> RunFacts:
    """Facts whose exposure and connection report are given (computed once, as a run's)."""
    facts = RunFacts(run_dir=tmp_path, config=None, plan=None, interrupted=interrupted)
    facts._exposure = exposure
    facts._connections = connections or {"available": False, "reason": "none here"}
    return facts


def _verdicts(doc: dict) -> dict[str, str]:
    return {c["name"]: c["verdict"] for c in doc["columns"]}


def test_the_marks_in_order_and_the_input_left_as_it_was(tmp_path):
    built = _built(a=PASS, b=PASS, c=FAIL)
    before = copy.deepcopy(built)
    doc = finish(Judged(built, _facts(tmp_path, {"a": MISSED, "b": HIT, "c": MISSED})),
                 Ending(skipped_faults=("broker-kill (external)",), meta={"run_dir": "x"}))
    # exposure first, then the skipped faults: a missed PASS is NOT EXERCISED, not SKIPPED
    assert _verdicts(doc) == {"a": NOT_EXERCISED, "b": SKIPPED, "c": FAIL}
    assert doc["exit_code"] == EXIT_ANOMALY and doc["run_dir"] == "x"
    assert built == before  # finished again, from the document as it was built
    again = finish(Judged(built, _facts(tmp_path, {"a": MISSED})))
    assert _verdicts(again) == {"a": NOT_EXERCISED, "b": PASS, "c": FAIL}


def test_a_disagreement_is_unknown_before_the_exposure_says_not_exercised(tmp_path):
    differ = {"compared": True, "agree": False, "n_differ": 1, "differ": [],
              "where": [["a", "read_committed"]], "modes": ["a"]}
    doc = finish(Judged(_built(a=PASS, b=PASS), _facts(tmp_path, {"a": MISSED}),
                        CrossCheck(differ)))
    assert _verdicts(doc) == {"a": UNKNOWN, "b": PASS}
    assert doc["exit_code"] == EXIT_INCOMPLETE and doc["live_vs_batch"] is differ


def test_an_interrupted_run_cannot_pass(tmp_path):
    doc = finish(Judged(_built(a=PASS, b=FAIL), _facts(tmp_path, {}, "SIGTERM during drain")))
    assert _verdicts(doc) == {"a": UNKNOWN, "b": FAIL}
    assert doc["interrupted"] == "SIGTERM during drain" and doc["exit_code"] == EXIT_ANOMALY


def test_the_live_verdict_checked_by_the_batch_pass(tmp_path):
    agree = {"compared": True, "agree": True, "n_differ": 0, "differ": [], "modes": []}
    batch = _built(a=FAIL, b=PASS)
    doc = finish(Judged(_built(a=PASS, b=PASS), _facts(tmp_path, {}),
                        CrossCheck(agree, batch=batch, seconds=2.0)))
    assert _verdicts(doc) == {"a": UNKNOWN, "b": PASS}
    assert doc["columns"][0]["reasons"] == ["the batch cross-check judged it FAIL "
                                            "(forbidden lost)"]
    assert doc["batch"]["differ"][0]["batch"] == FAIL and not doc["batch"]["agree"]
    assert (doc["exit_code"], doc["batch"]["exit_code"]) == (EXIT_INCOMPLETE, EXIT_ANOMALY)


def test_a_forbidden_connection_finding_fails_only_a_run_that_would_pass(tmp_path):
    failed = {"available": True, "failed": True, "findings": []}
    doc = finish(Judged(_built(a=PASS), _facts(tmp_path, {}, connections=failed)))
    assert doc["exit_code"] == EXIT_ANOMALY and doc["connections"] is failed
    doc = finish(Judged(_built(a=PASS), _facts(tmp_path, {"a": MISSED}, connections=failed)))
    assert doc["exit_code"] == EXIT_NOT_EXERCISED
    # the live verdict shown before the connection log is read has no report
    shown = finish(Judged(_built(a=PASS), _facts(tmp_path, {}, connections=failed)),
                   Ending(connections=False))
    assert shown["exit_code"] == EXIT_OK and "connections" not in shown


def test_the_matrix_code_over_a_passing_grid():
    docs = [{"columns": [{"name": "a", "verdict": PASS}], "scenario": "s"}]
    grid = {"outcomes": {"s": {"a": [PASS]}}}
    assert X.set_grid(grid) == EXIT_OK
    assert X.of_matrix(grid, docs) == (EXIT_OK, None)
    assert X.of_matrix(grid, [{**docs[0], "connections": {"failed": True}}]) == \
        (EXIT_ANOMALY, "connections")
    assert X.of_matrix(grid, [{**docs[0], "selftest": {"ok": False}}]) == \
        (EXIT_INCOMPLETE, "selftest")
    worse = {"outcomes": {"s": {"a": [PASS, NOT_EXERCISED]}}}
    X.set_grid(worse)
    assert X.of_matrix(worse, [{**docs[0], "selftest": {"ok": False}}]) == \
        (EXIT_NOT_EXERCISED, None)


def test_the_known_bugs_grid_code():
    assert X.set_known_bugs({"rows": [1]}, mismatch=True, open_rows=True) == EXIT_ANOMALY
    assert X.set_known_bugs({"rows": [1]}, mismatch=False, open_rows=True) == EXIT_INCOMPLETE
    assert X.set_known_bugs({"rows": []}, mismatch=False, open_rows=False) == EXIT_INCOMPLETE
    assert X.set_known_bugs({"rows": [1]}, mismatch=False, open_rows=False) == EXIT_OK
