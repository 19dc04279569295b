"""`verifier selftest` on a small recorded real run of every scenario (tests/data/runs/):
every injected anomaly detected with its kind and place, no false alarm (issue 22).

Needs Spark only (no cluster); slow (a dozen analyses per run), hence this tier.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verifier.judge.selftest import selftest

pytestmark = pytest.mark.integration

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs"
RECORDED = sorted(p.parent for p in RUNS.glob("*/**/config.json")) if RUNS.is_dir() else []


@pytest.mark.skipif(not RECORDED, reason="no recorded runs under tests/data/runs/ yet")
@pytest.mark.parametrize("run_dir", RECORDED, ids=[str(p.relative_to(RUNS)) for p in RECORDED])
def test_selftest_passes_on_a_recorded_run(spark, run_dir, tmp_path):
    result = selftest(run_dir, seed=1, keep=tmp_path / "kept", spark=spark)
    assert result.ok, result.render()
    kinds = {r.kind for r in result.rows}
    assert {"lost", "duplicate-delivery", "inconsistent-offset", "legal"} <= kinds, kinds
