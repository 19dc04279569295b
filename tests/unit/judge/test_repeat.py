"""`chaos --repeat N` folds N runs of a scenario into one cell per column: every outcome
kept in run order, the worst first, the exit code following the worst (issue 38)."""

from __future__ import annotations

from verifier.assess.outputs import combined
from verifier.judge.verdict import (
    FAIL,
    NOT_EXERCISED,
    PASS,
    SKIPPED,
    UNKNOWN,
    combine,
    repeated_outcomes,
    tally,
    worst_of,
)
from verifier.rundata.vocab import EXIT_ANOMALY, EXIT_INCOMPLETE, EXIT_NOT_EXERCISED, EXIT_OK


def _doc(scenario: str, **verdicts: str) -> dict:
    """A run's document reduced to what combining reads: its columns' verdicts."""
    return {"scenario": scenario,
            "columns": [{"name": n.replace("_", "-"), "verdict": v} for n, v in verdicts.items()]}


def test_each_cell_keeps_every_outcome_in_run_order():
    docs = [_doc("ack-loss", idempotent=PASS, at_least_once=PASS),
            _doc("ack-loss", idempotent=FAIL, at_least_once=PASS),
            _doc("baseline", idempotent=PASS, at_least_once=PASS),
            _doc("ack-loss", idempotent=NOT_EXERCISED, at_least_once=PASS)]
    grid = combined(docs)
    assert grid["outcomes"]["ack-loss"] == {"idempotent": [PASS, FAIL, NOT_EXERCISED],
                                            "at-least-once": [PASS, PASS, PASS]}
    assert grid["outcomes"]["baseline"] == {"idempotent": [PASS], "at-least-once": [PASS]}
    assert grid["repetitions"] == {"ack-loss": 3, "baseline": 1}
    # the grid stays what it was before --repeat: the worst verdict per cell
    assert grid["grid"] == {"ack-loss": {"idempotent": FAIL, "at-least-once": PASS},
                            "baseline": {"idempotent": PASS, "at-least-once": PASS}}
    assert grid["scenarios"] == ["ack-loss", "baseline"]
    assert grid["columns"] == ["idempotent", "at-least-once"]
    assert grid["exit_code"] == EXIT_ANOMALY


def test_the_exit_code_follows_the_worst_outcome_of_any_repetition():
    def code(*verdicts: str) -> int:
        return combined([_doc("s", m=v) for v in verdicts])["exit_code"]

    assert code(PASS, PASS, PASS) == EXIT_OK
    assert code(PASS, NOT_EXERCISED, PASS) == EXIT_NOT_EXERCISED
    assert code(NOT_EXERCISED, UNKNOWN, PASS) == EXIT_INCOMPLETE
    assert code(UNKNOWN, PASS, FAIL) == EXIT_ANOMALY
    # one repetition whose faults ran and passed showed something: not "all skipped"
    assert code(SKIPPED, PASS) == EXIT_OK
    assert code(SKIPPED, SKIPPED) == EXIT_INCOMPLETE


def test_a_run_missing_a_column_its_scenario_has_counts_unknown_there():
    # a run that crashed before its pipelines were planned reports no pipeline column
    docs = [_doc("s", idempotent=PASS, pipe=PASS), _doc("s", idempotent=PASS)]
    assert repeated_outcomes(docs) == {"s": {"idempotent": [PASS, PASS],
                                             "pipe": [PASS, UNKNOWN]}}
    assert combine(docs)["grid"]["s"]["pipe"] == UNKNOWN


def test_tally_counts_each_outcome_worst_first():
    assert tally([PASS, NOT_EXERCISED, PASS]) == [(NOT_EXERCISED, 1), (PASS, 2)]
    assert tally([FAIL, FAIL, FAIL]) == [(FAIL, 3)]
    assert tally([PASS, SKIPPED, FAIL, UNKNOWN]) == [(FAIL, 1), (UNKNOWN, 1), (SKIPPED, 1),
                                                     (PASS, 1)]


def test_worst_of_follows_the_verdict_order():
    assert worst_of([PASS, SKIPPED]) == SKIPPED
    assert worst_of([SKIPPED, NOT_EXERCISED, PASS]) == NOT_EXERCISED
    assert worst_of([NOT_EXERCISED, UNKNOWN]) == UNKNOWN
    assert worst_of([FAIL, UNKNOWN, PASS]) == FAIL
    assert worst_of([]) == UNKNOWN  # no outcome establishes nothing
