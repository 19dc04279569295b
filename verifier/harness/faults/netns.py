"""Network partitions: nftables rules inside a network namespace the run creates.

Why this shape (tried on the 2-core target VM, docs/faults.md "Network partitions"): ``tc
netem`` is missing on its kernel (no qdisc modules to load), and on one loopback every
outgoing connection has source 127.0.0.1, so addresses cannot tell brokers apart.
Instead each broker runs as its own Unix user (``ClusterSpec.node_uid_base``) and the
rules match the socket owner (``meta skuid``) together with the peers' replication and
controller ports. Client ports are never
matched: clients (root) still reach every broker, only broker-to-broker traffic is cut.

The rules must never touch the host's firewall, so :class:`Partition` refuses to run
unless the process is in a namespace other than PID 1's; :class:`NetNamespace` creates
one, and the run (cluster, proxy, generators, observer) executes inside it
(``ip netns exec``).
"""

from __future__ import annotations

import os
import signal
import subprocess

from verifier.harness.cluster import ClusterSpec
from verifier.rundata.errors import CommandFailed, EnvironmentProblem, UsageError

TABLE = "verifier_partition"


def _run(argv: list[str], stdin: str | None = None) -> str:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CommandFailed(argv, proc.returncode, (proc.stderr or proc.stdout)[-2000:])
    return proc.stdout


def current_netns() -> str | None:
    """The name of the ``ip netns`` namespace this process runs in, None for the host's.

    (Comparing with /proc/1/ns/net is not possible: inside ``ip netns exec`` reading
    PID 1's namespace link is refused with EACCES.)
    """
    proc = subprocess.run(["ip", "netns", "identify", str(os.getpid())],
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def in_private_netns() -> bool:
    return current_netns() is not None


class NetNamespace:
    """A network namespace with loopback up; deleted (and emptied) on exit."""

    def __init__(self, name: str) -> None:
        self.name = name

    def create(self) -> NetNamespace:
        _run(["ip", "netns", "add", self.name])
        try:
            _run(["ip", "-n", self.name, "link", "set", "lo", "up"])
        except BaseException:
            self.delete()
            raise
        return self

    def argv(self, command: list[str]) -> list[str]:
        """``command`` run inside the namespace (``ip netns exec`` execs it, same pid)."""
        return ["ip", "netns", "exec", self.name, *command]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in _run(["ip", "netns", "pids", self.name]).split()]
        except CommandFailed:
            return []

    def delete(self) -> None:
        """SIGKILL what still runs inside (only processes this run started live there),
        then remove the namespace."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)

    def __enter__(self) -> NetNamespace:
        return self.create()

    def __exit__(self, *exc) -> None:
        self.delete()


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
                "the cluster inside a namespace (verifier.harness.faults.netns.NetNamespace)")

    def cut(self, node: int) -> dict:
        self._require_private()
        rules = partition_rules(self.spec, node)
        script = (f"table inet {TABLE} {{\n  chain cut{node} {{\n"
                  f"    type filter hook output priority 0; policy accept;\n"
                  f"    {rules.replace(chr(10), chr(10) + '    ').rstrip()}\n  }}\n}}\n")
        _run(["nft", "-f", "-"], stdin=script)
        self.cut_nodes.add(node)
        return {"isolated": node, "rules": rules.strip().splitlines()}

    def heal(self, node: int) -> dict:
        self._require_private()
        _run(["nft", "delete", "chain", "inet", TABLE, f"cut{node}"])
        self.cut_nodes.discard(node)
        return {"healed": node}

    def heal_all(self) -> dict:
        if not in_private_netns():
            return {"table": "not in a private namespace; nothing to remove"}
        proc = subprocess.run(["nft", "delete", "table", "inet", TABLE],
                              capture_output=True, text=True, check=False)
        self.cut_nodes.clear()
        return {"table_removed": proc.returncode == 0}
