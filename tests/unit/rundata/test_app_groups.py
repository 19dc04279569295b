"""Group protocols as a dimension, and share groups (issue 47): the columns each
protocol makes, the ids they take on the cluster, and what is refused, with its reason,
before anything starts."""

from __future__ import annotations

import pytest

from verifier.rundata import app_groups as G
from verifier.rundata.apps import environment, group_id, output_topic, plan_apps
from verifier.rundata.errors import UsageError

JAVA = "java-copier-transactional,java-share-copier"


def test_each_consumer_group_app_once_per_protocol_and_the_share_copier_once():
    apps = G.expand(plan_apps(JAVA, None, 2), G.parse_protocols("classic,consumer"))
    assert [(a.name, a.group_protocol, a.group_type) for a in apps] == [
        ("java-copier-transactional[classic]", "classic", "consumer"),
        ("java-copier-transactional[consumer]", "consumer", "consumer"),
        ("java-share-copier", "", "share")]
    assert apps[1].label == "app:java-copier-transactional[consumer]"
    # without the flag nothing changes: the columns keep their names
    assert [a.name for a in G.expand(plan_apps(JAVA, None, 2), ())] == [
        "java-copier-transactional", "java-share-copier"]


def test_a_protocols_ids_on_the_cluster_are_legal_topic_names_and_apart():
    name = "java-copier-transactional[consumer]"
    assert output_topic("r1", name) == "r1.app.java-copier-transactional-consumer.out"
    assert group_id("r1", name) != group_id("r1", "java-copier-transactional[classic]")
    env = environment("r1", name, "b:1", ["t"], 0, group_protocol="consumer")
    assert env[G.ENV_GROUP_PROTOCOL] == "consumer"
    assert G.ENV_GROUP_PROTOCOL not in environment("r1", "x", "b:1", ["t"], 0)


@pytest.mark.parametrize("text", ["", "cooperative", "classic,classic", "share"])
def test_a_protocol_list_names_classic_or_consumer_each_once(text):
    with pytest.raises(UsageError):
        G.parse_protocols(text)


def test_the_consumer_protocol_is_refused_where_a_client_lacks_it():
    both = ("classic", "consumer")
    said = G.refusals(plan_apps("copier-commit-after,streams-eos", None, 2), both, "4.4.0")
    assert len(said) == 2
    assert "kafka-python 3.0.12 has no group.protocol" in said[0]
    assert "copier-commit-after" in said[0]
    assert "KIP-1071" in said[1] and "streams-eos" in said[1]
    # classic alone is every client's
    assert G.refusals(plan_apps("copier-commit-after,streams-eos", None, 2), ("classic",),
                      "4.4.0") == []


def test_the_consumer_protocol_needs_a_4_0_broker_and_share_groups_4_2():
    said = G.refusals(plan_apps("java-copier-commit-after", None, 2), ("consumer",), "3.9.1")
    assert said == ["--group-protocol consumer needs a 4.0 or later broker (KIP-848 is GA "
                    "from 4.0), not 3.9.1"]
    said = G.refusals(plan_apps("java-share-copier", None, 2), (), "4.1.1")
    assert len(said) == 1 and "production-ready from Kafka 4.2" in said[0]
    assert G.refusals(plan_apps(JAVA, None, 2), ("classic", "consumer"), "4.4.0") == []
    assert G.refusals(plan_apps(JAVA, None, 2), ("classic", "consumer"), "4.2.2") == []
    # an external cluster's release is not known here: nothing refused on it
    assert G.refusals(plan_apps(JAVA, None, 2), ("consumer",), None) == []
    said = G.refusals(plan_apps(JAVA, None, 2), ("consumer",), "4.4.0", client="4.1.1")
    assert said and "kafka-clients 4.2 or later" in said[-1]
