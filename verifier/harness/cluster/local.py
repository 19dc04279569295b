"""A local Apache Kafka cluster: 1 or 3 KRaft nodes on 127.0.0.1, one JVM per node.

All state lives in one folder (:mod:`verifier.harness.cluster.folder`), so another shell, a test
fixture or the chaos orchestrator can find, control and stop the same cluster. Nodes are
started in their own process session, so they
outlive the command that started them (``verifier cluster up`` returns); whoever wants
them gone calls :meth:`LocalCluster.down`.
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from verifier.harness.cluster.config import HOST, ClusterSpec, jvm_options
from verifier.harness.cluster.folder import ClusterFolder, new_cluster_id
from verifier.harness.cluster.processes import (
    is_alive,
    is_stopped,
    port_in_use,
    signal_process,
)
from verifier.harness.kafka_wire import metadata_brokers
from verifier.harness.procs import spawn
from verifier.rundata import jvm
from verifier.rundata.errors import ClusterError, VerifierError
from verifier.rundata.waiting import GiveUp, wait_until

#: JVM start on a 2-core machine, three nodes at once: 15-40 s observed; the ceiling
#: leaves room for a loaded CI machine.
READY_TIMEOUT = 180.0
#: SIGTERM gives a broker a controlled shutdown (leadership moves first); on 2 cores this
#: takes a few seconds, after which we SIGKILL.
STOP_TIMEOUT = 30.0


@dataclass
class NodeStatus:
    node: int
    state: str  # running | paused | dead | stopped
    pid: int | None
    client_port: int
    advertised_port: int


class LocalCluster:
    """Create, start, signal and stop the nodes of one local cluster."""

    def __init__(self, state_dir: Path, spec: ClusterSpec, cluster_id: str,
                 pids: dict[int, int | None] | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.spec = spec
        self.cluster_id = cluster_id
        self.pids: dict[int, int | None] = dict(pids or {})
        self._procs: dict[int, subprocess.Popen] = {}
        self.folder = ClusterFolder(self.state_dir)
        #: owned by a running tool (a chaos run): its brokers die with the tool; a
        #: cluster of `verifier cluster up` outlives the command that started it
        self.owned = False

    # ----- state folder -------------------------------------------------------------

    @classmethod
    def load(cls, state_dir: Path) -> LocalCluster | None:
        state = ClusterFolder(state_dir).read()
        return None if state is None else cls(Path(state_dir), *state)

    def save(self) -> None:
        self.folder.write(self.spec, self.cluster_id, self.pids)

    def log_file(self, node: int) -> Path:
        return self.folder.log_file(node)

    @property
    def bootstrap_servers(self) -> str:
        return self.spec.bootstrap_servers()

    @classmethod
    def create(cls, state_dir: Path, spec: ClusterSpec) -> LocalCluster:
        """Write every node's configuration and format its storage (not started)."""
        jvm.require_java()
        jars = jvm.resolve(jvm.broker_jars(spec.kafka_version))
        if ClusterFolder(state_dir).holds_cluster():
            raise ClusterError(f"{state_dir} already holds a cluster")
        cluster = cls(state_dir, spec, new_cluster_id(), {n: None for n in spec.node_ids})
        cluster.folder.format(spec, cluster.cluster_id, jars, cluster._jvm_opts)
        cluster.save()
        return cluster

    def _jvm_opts(self, node: int) -> list[str]:
        return jvm_options(self.spec, str(self.folder.node_dir(node) / "logs"))

    # ----- per-node control ---------------------------------------------------------

    def _marker(self, node: int) -> str:
        return str(self.folder.properties_file(node))

    def _reap(self, node: int) -> None:
        proc = self._procs.get(node)
        if proc is not None:
            proc.poll()

    def node_state(self, node: int) -> str:
        self._reap(node)
        pid = self.pids.get(node)
        if not pid:
            return "stopped"
        proc = self._procs.get(node)
        if proc is not None and proc.pid == pid:
            # our own child: alive until it exits, even in the instant between fork and
            # exec when its command line is still ours (the marker check would fail)
            if proc.returncode is not None:
                return "dead"
        elif not is_alive(pid, self._marker(node)):
            return "dead"
        return "paused" if is_stopped(pid) else "running"

    def status(self) -> list[NodeStatus]:
        return [
            NodeStatus(n, self.node_state(n), self.pids.get(n), self.spec.client_port(n),
                       self.spec.advertised_port(n))
            for n in self.spec.node_ids
        ]

    def live_nodes(self) -> list[int]:
        """Nodes whose JVM runs and is not paused."""
        return [n for n in self.spec.node_ids if self.node_state(n) == "running"]

    def start_node(self, node: int) -> int:
        """Start node ``node`` on its existing data; return its pid (not waiting for ready)."""
        if self.node_state(node) in ("running", "paused"):
            raise ClusterError(f"node {node} is already running (pid {self.pids[node]})")
        for port in self.spec.ports(node):
            if port_in_use(port):
                raise ClusterError(
                    f"port {port} needed by node {node} is already in use by another process; "
                    "stop it or choose another base port (--base-port)"
                )
        jars = jvm.broker_jars(self.spec.kafka_version)
        if not jars.present:
            jvm.resolve(jars)
        log = open(self.log_file(node), "ab")  # noqa: SIM115 - handed to the child
        cmd = [jvm.java_executable(), *self._jvm_opts(node), "-cp", jars.classpath(), "kafka.Kafka",
               str(self.folder.properties_file(node))]
        uid = self.spec.node_uid(node)
        if uid is not None:  # its own Unix user, for per-broker firewall rules
            self.folder.give_node_to(node, uid)
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
        try:
            if self.owned:
                proc = spawn(f"broker-{node}", cmd, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
            else:
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        self._procs[node] = proc
        self.pids[node] = proc.pid
        self.save()
        return proc.pid

    def _signal(self, node: int, sig: signal.Signals) -> int:
        pid = self.pids.get(node)
        if self.node_state(node) not in ("running", "paused") or pid is None:
            raise ClusterError(f"node {node} is not running (state {self.node_state(node)})")
        signal_process(pid, sig)
        return pid

    def _wait_exit(self, node: int, timeout: float) -> None:
        wait_until(lambda: (self.node_state(node) in ("dead", "stopped"), self.node_state(node)),
                   timeout=timeout, what=f"node {node} to exit", expected="dead",
                   interval=0.05)

    def kill_node(self, node: int) -> None:
        """SIGKILL: an unclean crash; the node restarts with log recovery."""
        self._signal(node, signal.SIGKILL)
        self._wait_exit(node, 30)

    def stop_node(self, node: int, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM (controlled shutdown), then SIGKILL if it does not exit in time."""
        state = self.node_state(node)
        if state in ("dead", "stopped"):
            return
        pid = self.pids[node]
        assert pid is not None
        if state == "paused":
            signal_process(pid, signal.SIGCONT)  # a stopped JVM cannot handle SIGTERM
        signal_process(pid, signal.SIGTERM)
        try:
            self._wait_exit(node, timeout)
        except VerifierError:
            signal_process(pid, signal.SIGKILL)
            self._wait_exit(node, 30)

    def pause_node(self, node: int) -> None:
        """SIGSTOP: a hung broker (a long GC pause); its sockets stay open."""
        self._signal(node, signal.SIGSTOP)
        wait_until(lambda: (self.node_state(node) == "paused", self.node_state(node)),
                   timeout=10, what=f"node {node} to stop", expected="paused", interval=0.02)

    def resume_node(self, node: int) -> None:
        self._signal(node, signal.SIGCONT)
        wait_until(lambda: (self.node_state(node) == "running", self.node_state(node)),
                   timeout=10, what=f"node {node} to continue", expected="running",
                   interval=0.02)

    def restart_node(self, node: int, timeout: float = READY_TIMEOUT) -> None:
        """Stop (or finish off) the node and start it again on the same data."""
        if self.node_state(node) in ("running", "paused"):
            self.stop_node(node)
        self.start_node(node)
        self.wait_ready(timeout=timeout)

    # ----- whole cluster ------------------------------------------------------------

    def reconfigure(self, overrides: dict[str, str], timeout: float = READY_TIMEOUT,
                    replication_proxied: bool = False) -> bool:
        """Run every node with these extra broker settings (replacing the earlier
        ones), and its replication listener advertised through the proxy or not: a
        rolling restart, one node at a time and each ready before the next, so a 3-node
        quorum and its partitions stay available. False if nothing changed."""
        if dict(self.spec.overrides) == dict(overrides) and \
                self.spec.replication_proxied == replication_proxied:
            return False
        from dataclasses import replace

        self.spec = replace(self.spec, overrides=dict(overrides),
                            replication_proxied=replication_proxied)
        for n in self.spec.node_ids:
            self.folder.write_properties(self.spec, n)
        self.save()
        for n in self.spec.node_ids:
            if self.node_state(n) in ("running", "paused"):
                self.restart_node(n, timeout=timeout)
        return True


    def start(self, timeout: float = READY_TIMEOUT) -> None:
        """Start every node that is not running and wait until the cluster is ready."""
        started = []
        try:
            for n in self.spec.node_ids:
                if self.node_state(n) not in ("running", "paused"):
                    self.start_node(n)
                    started.append(n)
            self.wait_ready(timeout=timeout)
        except BaseException:  # also Ctrl-C: leave nothing half-started behind
            for n in started:
                self.stop_node(n, timeout=10)
            raise

    def _metadata_view(self) -> dict[int, list[int] | str]:
        view: dict[int, list[int] | str] = {}
        for n in self.live_nodes():
            try:
                brokers = metadata_brokers(HOST, self.spec.probe_port(n))
                view[n] = sorted(b.node_id for b in brokers)
            except OSError as exc:
                view[n] = f"{type(exc).__name__}: {exc}"
        return view

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until every running node answers Metadata and lists every running node.

        Asks each broker directly on its own client listener (its replication listener
        when the client one needs SASL), so readiness does not depend on a proxy in front
        of the advertised port.
        """
        def probe():
            dead = [n for n in self.spec.node_ids if self.node_state(n) == "dead"]
            expected = set(self.live_nodes())
            if dead and not expected:  # nothing left to wait for: fail now, not at the deadline
                tails = "\n".join(f"node {n}: {self.log_tail(n, 5)}" for n in dead)
                raise GiveUp(ClusterError(f"every node exited before the cluster was ready:\n"
                                          f"{tails}"))
            view = self._metadata_view()
            ok = bool(expected) and all(isinstance(v, list) and expected <= set(v)
                                        for v in view.values())
            return ok, {"dead": dead, "metadata": view}

        def describe(obs):
            text = f"metadata per node {obs['metadata']}"
            if obs["dead"]:
                tails = "; ".join(f"node {n} exited, log tail: {self.log_tail(n, 3)!r}"
                                  for n in obs["dead"])
                text += f"; {tails}"
            return text

        expected = sorted(self.live_nodes())
        wait_until(probe, timeout=timeout, what="the Kafka cluster to be ready",
                   expected=f"every running node {expected} listed by every running node",
                   describe=describe, interval=0.5)

    def log_tail(self, node: int, lines: int = 20) -> str:
        try:
            text = self.log_file(node).read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def down(self, *, remove_data: bool = True, kill: bool = False) -> None:
        """Stop every node (SIGTERM, then SIGKILL) and, by default, delete the folder.

        A tool's own cluster whose data goes with it (a chaos run's, or ``kill``: a test's)
        is killed instead: a controlled shutdown buys nothing there, and once two of three
        nodes are down the last ones wait out their timeout for a quorum that is gone
        (~25 s per cluster)."""
        for n in self.spec.node_ids:
            if self.node_state(n) in ("running", "paused"):
                if (self.owned or kill) and remove_data:
                    self.kill_node(n)  # the data goes anyway
                else:
                    self.stop_node(n, timeout=15)
            self.pids[n] = None
        if remove_data:
            self.folder.remove()
        else:
            self.save()


def up(state_dir: Path, spec: ClusterSpec, timeout: float = READY_TIMEOUT,
       owned: bool = False) -> tuple[LocalCluster, str]:
    """Start a cluster in ``state_dir`` or report the one already running there.

    Returns the cluster and what was done: ``started``, ``already running`` or
    ``restarted stale`` (a folder left by a killed run whose processes are all gone is
    discarded and a fresh cluster started).
    """
    existing = LocalCluster.load(state_dir)
    action = "started"
    if existing is not None:
        states = {n: existing.node_state(n) for n in existing.spec.node_ids}
        if all(s in ("running", "paused") for s in states.values()):
            return existing, "already running"
        if any(s in ("running", "paused") for s in states.values()):
            raise ClusterError(
                f"the cluster in {state_dir} is partly running ({states}); run "
                f"`verifier cluster down --state-dir {state_dir}` and start it again"
            )
        existing.down(remove_data=True)
        action = "restarted stale"
    taken = [(n, port) for n in spec.node_ids for port in spec.ports(n) if port_in_use(port)]
    if taken:
        n, port = taken[0]
        raise ClusterError(
            f"port {port} needed by node {n} is already in use by another process; "
            "stop it or choose another base port (--base-port)"
        )
    cluster = LocalCluster.create(state_dir, spec)
    cluster.owned = owned
    try:
        cluster.start(timeout=timeout)
    except BaseException:
        cluster.down(remove_data=False)
        raise
    return cluster, action
