"""The KAFKA-14402 row of the known-bugs grid, whole (issue 33): 3.5.2 (affected), 4.1.1
with transaction.partition.verification.enable=false (affected control) and 4.1.1 with its
default (fixed), kafka-python, one short run each: FAIL, FAIL, PASS, every one matching its
documented status (exit 0), with the held requests' answers and the schedule's order from
each run's nemesis history.

Not part of `make test` (three runs, two clusters: ~15 minutes on a loaded 2-core machine);
ports and folder from VERIFIER_CHAOS_BASE_PORT and VERIFIER_CHAOS_STATE_DIR (defaults:
30500, .state/chaos-known-bugs).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.orchestration.test_known_bug_run import (
    assert_forced_schedule,
    run_known_bugs,
)

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
BASE_PORT = int(os.environ.get("VERIFIER_CHAOS_BASE_PORT", "30500"))
STATE_DIR = Path(os.environ.get("VERIFIER_CHAOS_STATE_DIR",
                                str(ROOT / ".state" / "chaos-known-bugs")))


def test_kafka_14402_fails_on_3_5_2_and_with_the_verification_off_passes_with_it_on(tmp_path):
    done, grid = run_known_bugs(tmp_path / "out", BASE_PORT, STATE_DIR)
    said = (done.stdout + done.stderr)[-8000:]
    assert grid is not None, said
    rows = {(r["kafka"], r["setting"]): r for r in grid["rows"]}
    off = ("4.1.1", "transaction.partition.verification.enable=false")
    assert set(rows) == {("3.5.2", "defaults"), off, ("4.1.1", "defaults")}, rows
    want = {("3.5.2", "defaults"): ("affected", "FAIL"), off: ("affected", "FAIL"),
            ("4.1.1", "defaults"): ("fixed", "PASS")}
    for key, (status, outcome) in want.items():
        row = rows[key]
        assert (row["status"], row["outcomes"], row["match"]) == (status, [outcome], "yes"), \
            (key, row, said)
        # what the broker answered to the late Produces: written on the affected ones,
        # refused by the verification on the fixed one
        assert_forced_schedule(Path(row["runs"][0]), accepted=outcome == "FAIL")
    assert "refused" in rows[("4.1.1", "defaults")]["held"]
    assert done.returncode == 0, said
