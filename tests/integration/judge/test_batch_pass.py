"""The Spark batch pass on the unit tier's hand-written cases: one definition, two paths.

The unit tier judges each case of test_kinds, test_placement and test_completeness on the
definitions in plain Arrow (verifier/judge/selftest/local.py, no JVM). Here the same test
functions run again with the builder's ``engine`` set to the shared SparkSession, so each
case goes through the checks as ``verifier analyze`` runs them (verifier.judge.checks:
the shuffle, the torn sums, the filters) and must give the same answers.
"""

from __future__ import annotations

import pytest

from tests.unit.judge.test_completeness import *  # noqa: F403 - the cases, run again here
from tests.unit.judge.test_kinds import *  # noqa: F403
from tests.unit.judge.test_placement import *  # noqa: F403

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def _few_partitions(spark):
    """The cases are tiny frames: one shuffle partition saves most of each job's task
    overhead on two shared cores. Restored afterwards for the rest of the suite."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


@pytest.fixture
def engine(spark, _few_partitions):
    """The builder judges through Spark's batch checks."""
    return spark
