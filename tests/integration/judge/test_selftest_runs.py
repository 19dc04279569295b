"""`verifier selftest` on a small recorded real run of every scenario (tests/data/runs/):
every injected anomaly detected with its kind and place, no false alarm (issue 22).

Needs Spark only (no cluster): each run is analysed whole once (and must be judged as
recorded: every column PASS); its copies are judged on what their mutation touched
(verifier.judge.selftest.scope). One test keeps the whole-run
analysis of every copy as the reference: both give the same table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from verifier.judge.selftest import selftest

pytestmark = pytest.mark.integration

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs"
RECORDED = sorted(p.parent for p in RUNS.glob("*/**/config.json")) if RUNS.is_dir() else []


@pytest.mark.skipif(not RECORDED, reason="no recorded runs under tests/data/runs/ yet")
@pytest.mark.parametrize("run_dir", RECORDED, ids=[str(p.relative_to(RUNS)) for p in RECORDED])
def test_selftest_passes_on_a_recorded_run(spark, run_dir, tmp_path):
    """Every copy also goes through the whole live path (the stream checks, then the
    follower's remainder after the drain: lost, torn, hanging, inconsistent offsets) with
    live = batch (a row is ok only then), and the live path finds each injected kind the
    Spark observer shows; the plain reader's inconsistent offset is the batch pass's."""
    result = selftest(run_dir, seed=1, keep=tmp_path / "kept", spark=spark)
    # the run as recorded first (its own analysis, which the self-test makes anyway):
    # every mode kept its promise, so a false alarm here is a judge bug met on real
    # histories, markers, restarts and replays (this was test_recorded_runs' own analysis)
    assert set(result.baseline.values()) == {"PASS"}, result.baseline
    aborted = Counter({iso: n for (kind, mode, iso), n in result.baseline_counts.items()
                       if kind == "aborted-read" and mode == "transactional"})
    # transactions aborted on purpose (a fifth of them) show at read_uncommitted only
    history = run_dir / "histories" / "transactional-0.jsonl"
    meant = history.is_file() and b'"f":"abort"' in history.read_bytes()
    assert (aborted["read_uncommitted"] > 0) == meant, (aborted, meant)
    assert aborted["read_committed"] == 0, aborted
    assert result.ok, result.render()
    kinds = {r.kind for r in result.rows}
    assert {"lost", "duplicate-delivery", "inconsistent-offset", "legal"} <= kinds, kinds
    names = {r.mutation for r in result.rows}
    # the catalogue's function names of the mutations the run gave no target for
    skipped = {s.split(":")[0] for s in result.skipped}
    wanted = {"torn-transaction": "torn", "hanging-transaction": "hanging",
              "inconsistent-offset-observer": "inconsistent_observer"}
    # only transactions of one record are never torn (idle-connections: txn_size 1)
    assert skipped & set(wanted.values()) <= {"torn"}, result.skipped
    assert {m for m, fn in wanted.items() if fn not in skipped} <= names
    for r in result.rows:
        assert not r.live_differ, (r.mutation, r.live_differ)
        live = {x.split(" ")[0].split("@")[0] for x in r.live_found}
        if r.kind != "legal" and r.mutation != "inconsistent-offset":
            assert r.kind in live, (r.mutation, r.live_found)


#: one mutation of each way a copy's scope is found: observations removed (lost), a
#: history's sessions (duplicate across sessions), a transaction's records (torn), the
#: drain's end offsets (hanging), a producer added to the run (interleaved producers).
#: Every mutation side by side is tests/chaos/test_selftest_scope.py (both ways on the
#: combined run took 446 s of this tier at load ~40)
REFERENCE = {"lost", "duplicate-cross-session", "torn-transaction", "hanging-transaction",
             "interleaved-producers"}


def test_scoped_judging_gives_the_table_of_the_whole_run_analysis(spark):
    """The combined run (every mode, transactions across partitions, a restarted
    producer): each copy judged on its scope (the partitions and transactions its
    mutation touched, the rest from the run's analysis, without Spark) gives the same
    row, verdicts and live-versus-batch comparison as the copy analysed whole through
    Spark, as `verifier analyze` would."""
    run = RUNS / "combined"
    scoped = selftest(run, seed=1, spark=spark, only=REFERENCE)
    whole = selftest(run, seed=1, spark=spark, scoped=False, only=REFERENCE)
    assert {r.mutation for r in scoped.rows} == REFERENCE, scoped.render()
    assert scoped.as_json() == whole.as_json(), (scoped.render(), whole.render())
    assert scoped.ok, scoped.render()
