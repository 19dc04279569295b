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

from verifier.harness.cluster import ClusterSpec, LocalCluster, up
from verifier.harness.faults.control import ProxyClient
from verifier.harness.faults.proxy_process import ProxyProcess, proxied
from verifier.rundata.jvm import PROJECT_ROOT

TEST_BASE_PORT = int(os.environ.get("VERIFIER_TEST_BASE_PORT", "19100"))
TEST_STATE_DIR = Path(os.environ.get(
    "VERIFIER_TEST_STATE_DIR", PROJECT_ROOT / ".state" / f"test-cluster-{TEST_BASE_PORT}"))


@pytest.fixture(scope="session")
def _proxy_process() -> ProxyProcess:
    """The fault proxy in front of the test cluster's client ports (pass-through unless a
    test sets rules through the ``proxies`` fixture). Started before the brokers, so the
    first client connection already passes it."""
    spec = proxied(ClusterSpec(nodes=3, base_port=TEST_BASE_PORT))
    proc = ProxyProcess(spec, TEST_STATE_DIR.parent / f"test-proxy-{TEST_BASE_PORT}")
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def cluster(_proxy_process: ProxyProcess) -> LocalCluster:
    """A running 3-node cluster whose brokers advertise the proxy's ports, so
    ``bootstrap_servers`` and every client connection go through the fault proxy.
    Tests that fault a node must heal it before returning."""
    c, _ = up(TEST_STATE_DIR, _proxy_process.spec)
    try:
        yield c
    finally:
        if os.environ.get("VERIFIER_KEEP_CLUSTER") != "1":
            c.down()


@pytest.fixture
def proxies(cluster: LocalCluster, _proxy_process: ProxyProcess) -> ProxyClient:
    """The proxy's control client; every rule a test sets is removed when it ends."""
    client = _proxy_process.client
    client.clear_rules()
    try:
        yield client
    finally:
        client.clear_rules()


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
