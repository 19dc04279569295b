"""End-to-end check of the network-partition fault, run *inside* a network namespace:

    ip netns exec NS python -m tests.integration.harness.partition_check --base-port P --state-dir D

Starts a 3-node cluster whose brokers run as their own Unix users, cuts the leader of
partition 0 off from the other two with nftables, waits until the majority side has
fenced it and moved every leadership and ISR away from it, heals, waits until every
partition is back in sync, stops the cluster, and prints one JSON line with what it saw.
Used by the integration test; a human can run it to see whether partitions work on a
machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.cluster.config import HOST
from verifier.harness.faults.partition import Partition
from verifier.harness.kafka_wire import metadata_brokers, metadata_partitions
from verifier.harness.netns import in_private_netns
from verifier.harness.topics import create_topics
from verifier.rundata.errors import EnvironmentProblem
from verifier.rundata.waiting import wait_until

TOPIC = "t-partition-check"


def _majority_view(spec: ClusterSpec, isolated: int) -> dict:
    other = next(n for n in spec.node_ids if n != isolated)
    port = spec.client_port(other)
    brokers = sorted(b.node_id for b in metadata_brokers(HOST, port))
    parts = metadata_partitions(HOST, port, [TOPIC])
    return {"asked": other, "brokers": brokers,
            "partitions": {p.partition: {"leader": p.leader, "isr": list(p.isr)}
                           for p in parts}}


def run(base_port: int, state_dir: Path, uid_base: int) -> dict:
    if not in_private_netns():
        raise EnvironmentProblem("run this inside a network namespace (ip netns exec)")
    spec = ClusterSpec(nodes=3, base_port=base_port, node_uid_base=uid_base)
    cluster, _ = up(state_dir, spec)
    partition = Partition(spec)
    result: dict = {}
    try:
        bs = spec.direct_bootstrap_servers()
        create_topics(bs, {TOPIC: 3}, replication_factor=3)
        result["before"] = _majority_view(spec, isolated=0)  # 0: no node is cut yet
        node = result["before"]["partitions"][0]["leader"]
        result["isolated"] = node
        t0 = time.monotonic()
        result["cut"] = partition.cut(node)

        def fenced():
            view = _majority_view(spec, node)
            gone = node not in view["brokers"] and all(
                p["leader"] != node and node not in p["isr"] for p in view["partitions"].values())
            return gone, view

        result["during"] = wait_until(
            fenced, timeout=60, what=f"node {node} to be fenced by the majority",
            expected=f"node {node} absent from brokers, leaders and ISRs")
        result["fenced_after_s"] = round(time.monotonic() - t0, 1)
        partition.heal(node)
        t1 = time.monotonic()

        def healed():
            # ask the majority directly, as for "during": an admin client's view may
            # come from another broker whose metadata is momentarily ahead
            view = _majority_view(spec, node)
            whole = node in view["brokers"] and all(
                len(p["isr"]) == 3 for p in view["partitions"].values())
            return whole, view

        result["after"] = wait_until(
            healed, timeout=90, what=f"node {node} to rejoin every ISR",
            expected="3 in-sync replicas for every partition, seen by the majority")
        result["in_sync_after_heal_s"] = round(time.monotonic() - t1, 1)
    finally:
        partition.heal_all()
        cluster.down()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.integration.harness.partition_check")
    p.add_argument("--base-port", type=int, required=True)
    p.add_argument("--state-dir", type=Path, required=True)
    p.add_argument("--uid-base", type=int, default=61000)
    args = p.parse_args(argv)
    print(json.dumps(run(args.base_port, args.state_dir, args.uid_base)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
