"""Every mutation of the self-test judged on its scope against the copy analysed whole
through Spark, on the recorded combined run: the same table (issue 39). The integration
tier compares one mutation of each way a scope is found
(tests/integration/judge/test_selftest_runs.py); this is all fifteen, several minutes of
Spark analyses (446 s at load ~40 on a 2-core machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifier.judge.selftest import selftest

pytestmark = pytest.mark.chaos

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def test_every_mutation_scoped_gives_the_table_of_the_whole_run_analysis(spark):
    run = RUNS / "combined"
    scoped = selftest(run, seed=1, spark=spark)
    whole = selftest(run, seed=1, spark=spark, scoped=False)
    assert scoped.as_json() == whole.as_json(), (scoped.render(), whole.render())
    assert scoped.ok and len(scoped.rows) >= 12, scoped.render()
