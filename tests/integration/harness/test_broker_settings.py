"""A scenario's [broker] settings on real brokers: at start (a restart with new
server.properties, then every key checked as known to the version) and dynamically
(IncrementalAlterConfigs, restored afterwards)."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_STATE_DIR, port_base
from verifier.harness.broker_config import check_known, restore_dynamic, set_dynamic
from verifier.harness.cluster import ClusterSpec, up
from verifier.rundata.errors import BrokerConfigError

pytestmark = pytest.mark.integration

VERIFY = "transaction.partition.verification.enable"  # KIP-890 part 1, from 3.6 on


def _cluster(version: str):
    state = TEST_STATE_DIR.parent / f"{TEST_STATE_DIR.name}-settings-{version}"
    spec = ClusterSpec(nodes=1, base_port=port_base("settings"), heap_mb=384,
                       kafka_version=version)
    cluster, _ = up(state, spec, timeout=120)
    return cluster


def test_start_time_and_dynamic_settings_on_4_1():
    cluster = _cluster("4.1.1")
    bs = cluster.bootstrap_servers
    try:
        assert check_known(bs, {VERIFY: ""}) == {1: {VERIFY: "true"}}  # the default
        assert cluster.reconfigure({VERIFY: "false"})  # restarted with the setting
        assert "transaction.partition.verification.enable=false" in \
            cluster.folder.properties_file(1).read_text()
        assert check_known(bs, {VERIFY: ""}) == {1: {VERIFY: "false"}}
        assert not cluster.reconfigure({VERIFY: "false"})  # same settings: no restart

        previous = set_dynamic(bs, {VERIFY: "true"})
        assert previous == {1: {VERIFY: None}}  # no dynamic value before: heal deletes
        assert check_known(bs, {VERIFY: ""}) == {1: {VERIFY: "true"}}
        restore_dynamic(bs, previous)
        assert check_known(bs, {VERIFY: ""}) == {1: {VERIFY: "false"}}  # static again

        with pytest.raises(BrokerConfigError, match="refuse a dynamic change"):
            set_dynamic(bs, {"log.segment.bytes.typo": "1"})
        with pytest.raises(BrokerConfigError, match="does not know"):
            check_known(bs, {"no.such.setting": "1"}, "4.1.1")
    finally:
        cluster.down()


def test_a_setting_older_brokers_do_not_know_is_refused_not_ignored():
    cluster = _cluster("3.5.2")
    try:
        cluster.reconfigure({VERIFY: "false"})  # 3.5 starts anyway, only warning
        assert cluster.node_state(1) == "running"
        with pytest.raises(BrokerConfigError, match=r"Kafka 3\.5\.2 does not know.*" + VERIFY):
            check_known(cluster.bootstrap_servers, {VERIFY: "false"}, "3.5.2")
    finally:
        cluster.down()
