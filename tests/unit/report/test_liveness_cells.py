"""A liveness finding shows beside the verdict, in the run's exposure row and the chaos
grid's cell, and a stall the fault caused is not marked as a miss (✗)."""

from __future__ import annotations

from verifier.report.compare import exposure_text
from verifier.report.terminal import exposure_cell

FINDING = {"id": 1, "fault": "broker-kill", "acted": 3, "exercised": True, "stalled": True,
           "caused_stall": {"finding": True}, "liveness": "fault broker-kill #1 ..."}
MISSED = {"id": 1, "fault": "broker-kill", "acted": 3, "exercised": False, "stalled": True}


def test_the_exposure_row_says_liveness_not_a_miss():
    assert exposure_cell(FINDING) == "3 stalled: liveness"
    assert exposure_cell(MISSED) == "3 stalled ✗"
    assert exposure_cell({"id": 2, "fault": "producer-kill", "applied": False,
                          "acted": None, "exercised": None, "masked_by": 1}) == \
        "masked by #1"


def test_the_grid_cell_counts_the_runs_with_a_finding():
    found = {"exercised": True, "faults": [FINDING], "liveness": ["..."]}
    clean = {"exercised": True, "faults": [{**FINDING, "liveness": None}]}
    assert exposure_text([found]) == "exp 3 · liveness"
    assert exposure_text([found, clean, clean]) == "exp 9 · liveness 1/3"
    assert exposure_text([clean]) == "exp 3"
