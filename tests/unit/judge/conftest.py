"""The checks tier runs on tiny frames: one shuffle partition saves most of each job's
task overhead on two shared cores. Restored afterwards for the rest of the suite."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", autouse=True)
def _few_partitions(request):
    if "spark" not in request.fixturenames:
        yield
        return
    spark = request.getfixturevalue("spark")
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)
