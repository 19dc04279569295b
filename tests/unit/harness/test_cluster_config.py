"""Pure configuration of the local cluster."""

from __future__ import annotations

import pytest

from verifier.harness.cluster.config import (
    ClusterSpec,
    broker_properties,
    jvm_options,
    render_properties,
)
from verifier.rundata import jvm
from verifier.rundata.errors import UsageError


def test_three_node_ports_and_quorum():
    spec = ClusterSpec(nodes=3, base_port=9100)
    props = broker_properties(spec, 2, "/d")
    assert props["node.id"] == "2"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9301,2@127.0.0.1:9302,3@127.0.0.1:9303"
    assert props["listeners"] == (
        "EXTERNAL://127.0.0.1:9102,INTERNAL://127.0.0.1:9202,CONTROLLER://127.0.0.1:9302"
    )
    assert "CONTROLLER" not in props["advertised.listeners"]
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert spec.bootstrap_servers() == "127.0.0.1:9101,127.0.0.1:9102,127.0.0.1:9103"


def test_replication_settings_fit_node_count():
    one = broker_properties(ClusterSpec(nodes=1), 1, "/d")
    three = broker_properties(ClusterSpec(nodes=3), 1, "/d")
    # on one broker both RF and min ISR of the transaction log must be 1
    assert one["transaction.state.log.replication.factor"] == "1"
    assert one["transaction.state.log.min.isr"] == "1"
    assert one["min.insync.replicas"] == "1"
    assert three["transaction.state.log.replication.factor"] == "3"
    assert three["transaction.state.log.min.isr"] == "2"
    assert three["min.insync.replicas"] == "2"
    assert three["default.replication.factor"] == "3"
    assert three["group.initial.rebalance.delay.ms"] == "0"


def test_advertised_port_is_configurable_per_node():
    spec = ClusterSpec(nodes=3, base_port=9100, advertised_ports={1: 9401, 3: 9403})
    assert broker_properties(spec, 1, "/d")["advertised.listeners"].startswith(
        "EXTERNAL://127.0.0.1:9401,"
    )
    # node 2 has no proxy: it advertises its own listener
    assert broker_properties(spec, 2, "/d")["advertised.listeners"].startswith(
        "EXTERNAL://127.0.0.1:9102,"
    )
    assert spec.bootstrap_servers() == "127.0.0.1:9401,127.0.0.1:9102,127.0.0.1:9403"
    assert spec.direct_bootstrap_servers() == "127.0.0.1:9101,127.0.0.1:9102,127.0.0.1:9103"


def test_overrides_win_and_render():
    spec = ClusterSpec(nodes=1, overrides={"num.io.threads": "4"})
    text = render_properties(broker_properties(spec, 1, "/d"))
    assert "num.io.threads=4\n" in text
    assert "num.io.threads=2" not in text


@pytest.mark.parametrize("kwargs", [{"nodes": 2}, {"base_port": 80}, {"advertised_ports": {4: 1}}])
def test_bad_specs_are_rejected(kwargs):
    with pytest.raises(ValueError):
        ClusterSpec(**kwargs)


def test_spec_json_round_trip():
    spec = ClusterSpec(nodes=3, base_port=12000, advertised_ports={2: 12302}, heap_mb=384)
    assert ClusterSpec.from_json(spec.to_json()) == spec


def test_a_sasl_plain_client_listener():
    spec = ClusterSpec(nodes=1, base_port=29300, sasl_plain_users={"alice": "pw"})
    props = broker_properties(spec, 1, "/d")
    assert props["listener.security.protocol.map"] == (
        "EXTERNAL:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT")
    assert props["sasl.enabled.mechanisms"] == "PLAIN"
    assert props["listener.name.external.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";')
    assert spec.probe_port(1) == spec.internal_port(1)  # the tool's probe needs no SASL
    assert ClusterSpec.from_json(spec.to_json()) == spec
    plain = ClusterSpec(nodes=1)
    assert plain.probe_port(1) == plain.client_port(1)
    assert "sasl.enabled.mechanisms" not in broker_properties(plain, 1, "/d")


@pytest.mark.parametrize("bad", ["3.2.3", "2.8.0", "5.0.0", "4.1", "latest", "4.1.1-rc1"])
def test_versions_outside_kraft_3_3_to_4_are_refused(bad):
    with pytest.raises(UsageError, match="3.3 to 4.x|release number"):
        jvm.parse_kafka_version(bad)
    with pytest.raises(ValueError):
        ClusterSpec(nodes=1, kafka_version=bad)


def test_version_lists_keep_order_and_drop_repeats():
    assert jvm.parse_kafka_versions("3.5.2, 4.1.1,3.5.2,") == ["3.5.2", "4.1.1"]
    with pytest.raises(UsageError):
        jvm.parse_kafka_versions(" , ")


def test_each_version_has_its_own_jar_folder_and_logging(monkeypatch, tmp_path):
    monkeypatch.setenv("VERIFIER_JARS_DIR", str(tmp_path))
    old, new = jvm.broker_jars("3.6.2"), jvm.broker_jars("4.1.1")
    assert old.folder == tmp_path / "broker-3.6.2" and new.folder == tmp_path / "broker-4.1.1"
    assert old.pom_profile == "broker-log4j1" and new.pom_profile is None  # reload4j vs log4j2
    opts_old = jvm_options(ClusterSpec(nodes=1, kafka_version="3.6.2"), "/logs")
    opts_new = jvm_options(ClusterSpec(nodes=1, kafka_version="4.1.1"), "/logs")
    assert f"-Dlog4j.configuration=file:{jvm.LOG4J1_CONFIG}" in opts_old
    assert not any("log4j2" in o for o in opts_old)
    assert f"-Dlog4j2.configurationFile={jvm.LOG4J_CONFIG}" in opts_new
    assert jvm.LOG4J1_CONFIG.exists() and jvm.LOG4J_CONFIG.exists()


def test_properties_follow_the_version():
    old = broker_properties(ClusterSpec(nodes=3, kafka_version="3.3.2"), 1, "/d")
    new = broker_properties(ClusterSpec(nodes=3, kafka_version="4.1.1"), 1, "/d")
    # the static quorum every KRaft line understands
    assert old["controller.quorum.voters"] == new["controller.quorum.voters"]
    assert not any(k.startswith("share.") for k in old)  # share groups are 4.x
    assert new["share.coordinator.state.topic.replication.factor"] == "3"


def test_the_version_is_part_of_the_spec(monkeypatch):
    monkeypatch.setenv("KAFKA_VERSION", "3.9.1")
    assert ClusterSpec(nodes=1).kafka_version == "3.9.1"
    spec = ClusterSpec(nodes=1, kafka_version="3.5.2")
    assert ClusterSpec.from_json(spec.to_json()).kafka_version == "3.5.2"
    legacy = spec.to_json()
    del legacy["kafka_version"]  # a folder from before versions were recorded
    assert ClusterSpec.from_json(legacy).kafka_version == jvm.DEFAULT_KAFKA_VERSION
