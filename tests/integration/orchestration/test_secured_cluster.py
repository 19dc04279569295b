"""Security settings reach every client the tool starts (DESIGN §8, issue 12).

A 1-node local cluster whose client listener takes SASL_PLAINTEXT with PLAIN only (its own
base port, VERIFIER_TEST_SASL_BASE_PORT, default slot "sasl" of tests/conftest.py, and
state folder; stopped afterwards, also on failure). The ``baseline`` scenario runs on it
as an external cluster with the settings from a properties file, as ``verifier chaos
--bootstrap-servers BS --producer-config FILE`` does: topic admin, the four preset
generators and the user's, the Spark observer, the drain and the plain reader all have to
authenticate, since the listener refuses anyone else. The password must appear nowhere
under the run folder."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from streaming.observations import read_observations
from tests.conftest import port_base
from verifier.harness.cluster import ClusterSpec, up
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.vocab import ISOLATIONS, READERS

#: a whole `verifier chaos` run of its own (issue 39): in the chaos tier, `make test-runs`
#: (CI's step after `make test`), not in `make test`
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

BASE_PORT = int(os.environ.get("VERIFIER_TEST_SASL_BASE_PORT", port_base("sasl")))
STATE_DIR = PROJECT_ROOT / ".state" / f"test-sasl-{BASE_PORT}"
USER = "verifier"
PASSWORD = f"pw-{uuid.uuid4().hex}"  # unique: any copy of it anywhere is a leak


@pytest.fixture(scope="module")
def sasl_cluster():
    spec = ClusterSpec(nodes=1, base_port=BASE_PORT, sasl_plain_users={USER: PASSWORD})
    cluster, _ = up(STATE_DIR, spec)
    try:
        yield cluster
    finally:
        cluster.down()


def _properties(path: Path) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{USER}" password="{PASSWORD}";\n')
    return path


def test_a_client_without_the_settings_is_refused(sasl_cluster):
    from kafka.errors import KafkaTimeoutError

    from verifier.harness.topics import end_offsets

    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        end_offsets(sasl_cluster.bootstrap_servers, ["any"], "read_committed",
                    bootstrap_timeout_ms=3000)


def test_baseline_on_a_sasl_cluster_passes_every_mode(sasl_cluster, spark, tmp_path):
    from producers.properties import load_properties
    from producers.readback import commit_visible
    from verifier.api import derive_mode
    from verifier.harness.environment import ExternalEnvironment
    from verifier.harness.faults.targets import resolve_broker
    from verifier.harness.topics import admin
    from verifier.orchestration.chaos import run_one
    from verifier.orchestration.orchestrator import RunOptions, spark_env
    from verifier.orchestration.scenario import load_scenario
    from verifier.rundata.formats import read_json
    from verifier.rundata.plan import secrets_env, security_of

    props = _properties(tmp_path / "secured.properties")  # outside the output folder
    out = tmp_path / "out"
    settings = load_properties(props)
    security = security_of(settings)
    baseline = load_scenario("baseline")
    scenario = replace(baseline, workload=replace(baseline.workload, duration_s=10, rate=100))
    opts = RunOptions(out=out, seed=1, user_config=props, user_mode=derive_mode(settings),
                      user_settings=settings, profile="test", extra_env=spark_env())
    printed = io.StringIO()
    env = ExternalEnvironment(sasl_cluster.bootstrap_servers, security, out=printed)
    with env:
        doc = run_one(env, scenario, opts, spark, out=printed)
        run_dir = Path(doc["run_dir"])
        plan = read_json(run_dir / "config.json", "run-config")
        # leader and coordinator resolution, and the transactional read-back, on the
        # topics and transactional id of this very run
        bs, txn_topic = sasl_cluster.bootstrap_servers, plan["producers"]["transactional-0"]
        assert resolve_broker({"leader": {"topic": txn_topic["topic"], "partition": 0}}, bs,
                              **security) == 1
        tid = f"{plan['run']}.transactional-0"
        assert resolve_broker({"coordinator": {"transactional_id": tid}}, bs, **security) == 1
        assert commit_visible(bs, security, txn_topic["topic"], [(0, 0)]) is not None
        # the plain reader standalone, from the plan, with the secrets in the environment
        read = subprocess.run(
            [sys.executable, "-m", "streaming.plain_reader", "--plan",
             str(run_dir / "config.json"), "--timeout", "60"], capture_output=True,
            text=True, cwd=PROJECT_ROOT, timeout=120, env={**os.environ, **secrets_env(security)})
        assert read.returncode == 0 and "read_committed: 0 rows" not in read.stdout, read.stderr

    verdicts = {c["name"]: c["verdict"] for c in doc["columns"]}
    assert verdicts == {
        "at-most-once": "PASS", "at-least-once": "PASS", "idempotent": "PASS",
        "transactional@read_committed": "PASS", "transactional@read_uncommitted": "PASS",
        "user:secured.properties": "PASS",
    }, printed.getvalue()
    assert plan["security"] == {**security, "sasl_plain_password": "***"}
    topics = [p["topic"] for p in plan["producers"].values()]
    # the run's topics left the user's cluster with the environment (on its SASL login)
    with admin(sasl_cluster.bootstrap_servers, **security) as a:
        assert not set(topics) & set(a.list_topics()), a.list_topics()
    assert f"deleted the runs' {len(set(topics))} topics on" in printed.getvalue()
    for reader in READERS:
        for iso in ISOLATIONS:
            seen = set(read_observations(run_dir, reader, iso).column("topic").to_pylist())
            assert seen >= set(topics), (reader, iso, sorted(seen))
    leaks = [p for p in out.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert not leaks, f"the password was written to {leaks}"
    assert PASSWORD not in printed.getvalue()
