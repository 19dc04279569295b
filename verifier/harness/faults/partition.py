"""Network partitions: nftables rules inside the network namespace the run executes in.

Why this shape (tried on the 2-core target VM, docs/faults.md "Network partitions"): ``tc
netem`` is missing on its kernel (no qdisc modules to load), and on one loopback every
outgoing connection has source 127.0.0.1, so addresses cannot tell brokers apart.
Instead each broker runs as its own Unix user (``ClusterSpec.node_uid_base``) and the
rules match the socket owner (``meta skuid``) together with the peers' replication and
controller ports. Client ports are never
matched: clients (root) still reach every broker, only broker-to-broker traffic is cut.

The rules must never touch the host's firewall, so :class:`Partition` refuses to run
unless the process is in a namespace other than PID 1's; the run (cluster, proxy,
generators, observer) executes inside one (:class:`verifier.harness.netns.NetNamespace`).
"""

from __future__ import annotations

import subprocess

from verifier.harness.cluster import ClusterSpec
from verifier.harness.netns import checked_run, in_private_netns
from verifier.rundata.errors import EnvironmentProblem, UsageError

TABLE = "verifier_partition"


def partition_rules(spec: ClusterSpec, node: int) -> str:
    """An nft chain body that cuts ``node`` off from the other nodes (both directions).

    Dropping the packets *to* a listener is enough to kill a TCP connection in both
    directions (no data, no ACKs), so only destination ports are matched.
    """
    if spec.node_uid_base is None:
        raise UsageError("a network partition needs brokers running as their own users "
                         "(ClusterSpec.node_uid_base)")
    others = [n for n in spec.node_ids if n != node]
    if not others:
        raise UsageError("a 1-node cluster cannot be partitioned")

    def ports(nodes):
        return ", ".join(str(p) for n in nodes
                         for p in (spec.internal_port(n), spec.controller_port(n)))

    other_uids = ", ".join(str(spec.node_uid(n)) for n in others)
    return (f"meta skuid {spec.node_uid(node)} tcp dport {{ {ports(others)} }} drop\n"
            f"meta skuid {{ {other_uids} }} tcp dport {{ {ports([node])} }} drop\n")


class Partition:
    """Cut and heal single brokers with one nft chain per isolated node."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.cut_nodes: set[int] = set()

    def _require_private(self) -> None:
        if not in_private_netns():
            raise EnvironmentProblem(
                "refusing to change firewall rules in the host's network namespace; run "
                "the cluster inside a namespace (verifier.harness.netns.NetNamespace)")

    def cut(self, node: int) -> dict:
        self._require_private()
        rules = partition_rules(self.spec, node)
        script = (f"table inet {TABLE} {{\n  chain cut{node} {{\n"
                  f"    type filter hook output priority 0; policy accept;\n"
                  f"    {rules.replace(chr(10), chr(10) + '    ').rstrip()}\n  }}\n}}\n")
        checked_run(["nft", "-f", "-"], stdin=script)
        self.cut_nodes.add(node)
        return {"isolated": node, "rules": rules.strip().splitlines()}

    def heal(self, node: int) -> dict:
        self._require_private()
        checked_run(["nft", "delete", "chain", "inet", TABLE, f"cut{node}"])
        self.cut_nodes.discard(node)
        return {"healed": node}

    def heal_all(self) -> dict:
        if not in_private_netns():
            return {"table": "not in a private namespace; nothing to remove"}
        proc = subprocess.run(["nft", "delete", "table", "inet", TABLE],
                              capture_output=True, text=True, check=False)
        self.cut_nodes.clear()
        return {"table_removed": proc.returncode == 0}
