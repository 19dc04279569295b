"""The local Kafka cluster: configuration, processes and control."""

from verifier.harness.cluster.config import ClusterSpec, broker_properties
from verifier.harness.cluster.folder import default_state_dir
from verifier.harness.cluster.local import LocalCluster, NodeStatus, up

__all__ = [
    "ClusterSpec", "LocalCluster", "NodeStatus", "broker_properties", "default_state_dir", "up",
]
