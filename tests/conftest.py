"""Shared fixtures: the real local cluster and one Spark session for the whole run.

The integration tier runs against a real 3-node KRaft cluster started from the project's
own jars. It is started once per test session on VERIFIER_TEST_BASE_PORT (default 19100)
in VERIFIER_TEST_STATE_DIR, and stopped at the end, also on failure and Ctrl-C (pytest
runs fixture finalizers on KeyboardInterrupt; `make test` runs `cluster down` after
pytest as a second guard).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from verifier.cluster import ClusterSpec, LocalCluster, up
from verifier.jvm import PROJECT_ROOT

TEST_BASE_PORT = int(os.environ.get("VERIFIER_TEST_BASE_PORT", "19100"))
TEST_STATE_DIR = Path(
    os.environ.get("VERIFIER_TEST_STATE_DIR", PROJECT_ROOT / ".state" / f"test-cluster-{TEST_BASE_PORT}")
)


@pytest.fixture(scope="session")
def cluster() -> LocalCluster:
    """A running 3-node cluster. Tests that fault a node must heal it before returning."""
    spec = ClusterSpec(nodes=3, base_port=TEST_BASE_PORT)
    c, _ = up(TEST_STATE_DIR, spec)
    try:
        yield c
    finally:
        if os.environ.get("VERIFIER_KEEP_CLUSTER") != "1":
            c.down()


@pytest.fixture(scope="session")
def bootstrap(cluster: LocalCluster) -> str:
    return cluster.bootstrap_servers


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession with the Kafka connector, shared by every test."""
    from streaming.session import spark_session

    s = spark_session(app_name="verifier-tests")
    yield s
    s.stop()


@pytest.fixture
def topic_name(request) -> str:
    """A topic name unique to this test (topics are never reused between tests)."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:60]
    return f"t-{base}-{uuid.uuid4().hex[:6]}"
