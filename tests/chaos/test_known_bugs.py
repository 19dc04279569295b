"""The KAFKA-14402 row of the known-bugs grid, whole (issue 33): 3.5.2 (affected), 4.1.1
with transaction.partition.verification.enable=false (affected control) and 4.1.1 with its
default (fixed), kafka-python, three runs each (`--repeat 3`): FAIL 3/3, FAIL 3/3, PASS 3/3,
every one matching its documented status (exit 0), with the held requests' answers and, in
every run's nemesis history, the forced order: held, the EndTxn(abort) response passed,
the abort marker seen in partition 0's log, released by it, answered, the producer's next
requests let through only then.

Not part of `make test` (nine runs, two clusters: ~25 minutes on a loaded 2-core machine);
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
REPEAT = 3
OFF = ("4.1.1", "transaction.partition.verification.enable=false")
WANT = {("3.5.2", "defaults"): ("affected", "FAIL"), OFF: ("affected", "FAIL"),
        ("4.1.1", "defaults"): ("fixed", "PASS")}


def check_kafka_14402_grid(grid: dict, said: str = "") -> None:
    """Every combination reproduced its documented status in every run, each run forced
    in the documented order (the late Produce written after the abort marker on the
    affected ones, refused by the verification on the fixed one)."""
    rows = {(r["kafka"], r["setting"]): r for r in grid["rows"]}
    assert set(rows) == set(WANT), rows
    for key, (status, outcome) in WANT.items():
        row = rows[key]
        assert (row["status"], row["outcomes"], row["match"]) == \
            (status, [outcome] * REPEAT, "yes"), (key, row, said)
        assert len(row["runs"]) == REPEAT, row
        for run in row["runs"]:
            assert_forced_schedule(Path(run), accepted=outcome == "FAIL")
    assert "refused" in rows[("4.1.1", "defaults")]["held"]
    for key in (("3.5.2", "defaults"), OFF):
        assert "after the abort marker at" in rows[key]["held"], rows[key]
    assert grid["exit_code"] == 0, said


@pytest.mark.timeout(3 * 3600)
def test_kafka_14402_fails_on_3_5_2_and_with_the_verification_off_passes_with_it_on(tmp_path):
    done, grid = run_known_bugs(tmp_path / "out", BASE_PORT, STATE_DIR, "--repeat", str(REPEAT),
                                timeout=2 * 3600)
    said = (done.stdout + done.stderr)[-8000:]
    assert grid is not None, said
    check_kafka_14402_grid(grid, said)
    assert done.returncode == 0, said
