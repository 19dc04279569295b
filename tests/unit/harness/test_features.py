"""Reading ``kafka-features describe`` (Kafka 4.1.1's output): the finalized level of each
feature; metadata.version's release names are not levels."""

from verifier.harness.features import parse_describe

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
