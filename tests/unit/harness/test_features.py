"""Reading ``kafka-features describe`` (Kafka 4.1.1's output): the finalized level of each
feature; metadata.version's release names are not levels."""

import pytest

from verifier.harness.features import parse_clusters, parse_describe, split_cluster
from verifier.rundata.errors import UsageError

DESCRIBE_4_1_1 = (
    "Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0\t"
    "SupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: 12\n"
    "Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
    "FinalizedVersionLevel: 1\tEpoch: 12\n"
    "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.1-IV1\t"
    "FinalizedVersionLevel: 4.1-IV1\tEpoch: 12\n"
    "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\t"
    "FinalizedVersionLevel: 2\tEpoch: 12\n")


def test_finalized_levels_per_feature():
    levels = parse_describe(DESCRIBE_4_1_1)
    assert levels == {"eligible.leader.replicas.version": 0, "group.version": 1,
                      "transaction.version": 2}


def test_a_cluster_is_a_version_at_feature_levels():
    """Issue 50: ``4.4.0+transaction.version=0`` names a 4.4.0 cluster set to level 0;
    written back the same way whatever the spacing, repeats dropped, order kept."""
    assert split_cluster("4.4.0+transaction.version=0") == ("4.4.0", {"transaction.version": 0})
    assert split_cluster(" 4.1.1 ") == ("4.1.1", {})
    assert parse_clusters(["4.4.0+ transaction.version = 0", "3.5.2", "4.4.0",
                           "4.4.0+transaction.version=0"]) == [
        "4.4.0+transaction.version=0", "3.5.2", "4.4.0"]


@pytest.mark.parametrize("key, word", [
    ("3.9.1+transaction.version=2", "4.x brokers only"),
    ("4.4.0+transaction.version=3", "transaction.version=0|1|2"),
    ("4.4.0+transaction.version", "VERSION+FEATURE=LEVEL"),
    ("4.4.0+metadata.version=1", "VERSION+FEATURE=LEVEL"),
    ("5.0.0", "3.3 to 4.x"),
])
def test_a_cluster_the_tool_cannot_set_is_a_usage_error(key, word):
    with pytest.raises(UsageError, match=word.replace("|", r"\|").replace("+", r"\+")):
        split_cluster(key)
