"""Shared fixtures: the real local cluster and one Spark session for the whole run.

The integration tier runs against a real 3-node KRaft cluster started from the project's
own jars. It is started once per test session (per pytest-xdist worker) on
VERIFIER_TEST_BASE_PORT (default 19100; other workers on ports derived from it, see
:func:`port_base`) in VERIFIER_TEST_STATE_DIR (``-gwN`` appended per worker), and stopped
at the end, also on failure and Ctrl-C (pytest runs fixture finalizers on
KeyboardInterrupt; `make test` runs `cluster down` after pytest as a second guard).
"""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import pytest

from verifier.harness.cluster import ClusterSpec, LocalCluster, up
from verifier.harness.faults.control import ProxyClient
from verifier.harness.faults.proxy_process import ProxyProcess, proxied
from verifier.rundata.jvm import PROJECT_ROOT

#: the pytest-xdist worker this process is ("gw0", "gw1", ...; "" outside xdist)
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
ROOT_BASE_PORT = int(os.environ.get("VERIFIER_TEST_BASE_PORT", "19100"))
#: every cluster the integration tier starts, one port slot each per worker. A cluster's
#: port plan is base+0..3 (nodes 1-3), +100.., +200.., +300.. (the proxy's control port
#: and listeners; verifier/harness/cluster/config.py), so slots 4 ports apart interleave
#: in one block of 404 ports: 25 slots a block, two workers' slots in the first one.
PORT_SLOTS = ("shared", "cli", "cli-busy", "versions", "settings", "hold", "partition",
              "idle", "sasl", "lifetime", "known-bugs", "safe")


def port_base(slot: str, worker: str = WORKER) -> int:
    """The base port of one of the tier's clusters (:data:`PORT_SLOTS`) on this worker:
    workers never share a port, and worker gw0 (or no xdist) keeps the shared cluster
    on VERIFIER_TEST_BASE_PORT itself."""
    i = int(worker[2:] or 0) * len(PORT_SLOTS) + PORT_SLOTS.index(slot)
    return ROOT_BASE_PORT + (i // 25) * 400 + (i % 25) * 4


TEST_BASE_PORT = port_base("shared")
_STATE_ROOT = Path(os.environ.get(
    "VERIFIER_TEST_STATE_DIR", PROJECT_ROOT / ".state" / f"test-cluster-{ROOT_BASE_PORT}"))
#: the shared cluster's folder: one per xdist worker (``<dir>-gw1``), the folder itself
#: outside xdist; `make test` stops whatever is left in either after the run
TEST_STATE_DIR = _STATE_ROOT.with_name(f"{_STATE_ROOT.name}-{WORKER}") if WORKER else _STATE_ROOT


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
            c.down(kill=True)  # its data goes: no controlled shutdown (~25 s a worker)


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


#: the shared session's JVM output (log4j included): a context that stops in the middle of
#: the tier says why there
SPARK_LOG = TEST_STATE_DIR.parent / f"{TEST_STATE_DIR.name}-spark.log"
#: (the test after which the shared context was found stopped, its log's last errors)
_SPARK_STOPPED: list[tuple[str, list[str]]] = []


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession with the Kafka connector, shared by every test. 2 GB of
    driver heap: the tier analyses a few hundred runs in this one JVM for half an hour."""
    from streaming.session import spark_session

    SPARK_LOG.parent.mkdir(parents=True, exist_ok=True)
    SPARK_LOG.write_text("")
    s = spark_session(app_name="verifier-tests", conf={"spark.driver.memory": "2g"},
                      log_file=SPARK_LOG)
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _spark_still_running(request):
    """After each test that used the shared session: if its context has stopped, name the
    test and keep the log's last errors for the end of the run (every later Spark test
    fails with "Cannot call methods on a stopped SparkContext", which does not say why)."""
    yield
    if "spark" not in request.fixturenames or _SPARK_STOPPED:
        return
    s = request.getfixturevalue("spark")
    if s.sparkContext._jsc is None or s.sparkContext._jsc.sc().isStopped():
        lines = SPARK_LOG.read_text(errors="replace").splitlines() if SPARK_LOG.exists() else []
        errors = [ln for ln in lines if "ERROR" in ln or "Exception" in ln or "Error:" in ln]
        _SPARK_STOPPED.append((request.node.nodeid, (errors or lines)[-30:]))


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    """SIGTERM (a `timeout`, a CI runner's cancel) ends the run as Ctrl-C does, so the
    fixtures' finalizers stop the clusters they started: a SIGTERMed run left a broker
    of the versions test running (Python's default for SIGTERM runs no finalizer)."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


#: The integration tier's longest files, longest first (seconds of test time at two workers,
#: docs/benchmarks.md, 2026-11-28): xdist's loadfile hands files out in collection order,
#: so a long file collected last leaves the other worker idle until it ends. Run first,
#: the short files fill in behind them. Tests inside a file keep their order.
LONGEST_FIRST = (
    "pipelines/test_pipelines.py",           # the restart run, ~230 (make test-runs)
    "pipelines/test_executor_loss.py",       # ~240 (make test-runs)
    "judge/test_selftest_runs.py",           # 295
    "pipelines/test_retention_loss.py",      # ~160 (make test-runs)
    "streaming/test_observer_kill.py",       # 160
    "judge/test_batch_pass.py",              # 140
    "orchestration/test_external_spark.py",  # 130 (make test-runs)
    "orchestration/test_process_lifetime.py",  # 126 (make test-runs)
    "orchestration/test_drain_progress.py",  # 122
    "orchestration/test_secured_cluster.py",  # 111 (make test-runs)
    "orchestration/test_exposure_run.py",    # 109 (make test-runs)
    "orchestration/test_known_bug_run.py",   # 105 (make test-runs)
    "pipelines/test_triggers.py",            # ~75 (make test-runs)
    "harness/test_broker_versions.py",       # 93
)


#: a whole run's test (marker ``chaos``) without a timeout of its own gets this one, not
#: pyproject's 600 s: its run's own limits (a subprocess's 1200 or 1500 s, a kill's 420-s
#: wait, a driver's 240-s stop) are longer. CI's stop 57 lost its restart run to the 600 s,
#: which counts the module's fixtures: the test was killed 9.5 min in, mid-stop, with no
#: verdict written and the cause (a driver slow to stop) out of sight.
CHAOS_TIMEOUT = 1800


def pytest_collection_modifyitems(items):
    """The integration tier's longest files first (:data:`LONGEST_FIRST`), the rest in
    their collected order after them; a stable sort, so each file's order stands. A whole
    run's test without a timeout mark gets :data:`CHAOS_TIMEOUT`."""
    for item in items:
        if item.get_closest_marker("chaos") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(CHAOS_TIMEOUT))

    def rank(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if not path.startswith("tests/integration/"):
            return len(LONGEST_FIRST)
        rel = path.removeprefix("tests/integration/")
        return LONGEST_FIRST.index(rel) if rel in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


def pytest_terminal_summary(terminalreporter):
    for nodeid, lines in _SPARK_STOPPED:
        terminalreporter.section("the shared Spark session stopped")
        terminalreporter.write_line(f"found stopped after {nodeid}; {SPARK_LOG}, last errors:")
        for ln in lines:
            terminalreporter.write_line("  " + ln[:300])


@pytest.fixture
def topic_name(request) -> str:
    """A topic name unique to this test (topics are never reused between tests)."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:60]
    return f"t-{base}-{uuid.uuid4().hex[:6]}"
