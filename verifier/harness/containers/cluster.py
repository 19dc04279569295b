"""A KRaft cluster of containers, started and stopped through testcontainers.

One container per node (combined broker+controller) from the locally built image
(:mod:`verifier.harness.containers.image`), on two Docker networks:

- ``clients``: the network the node's client listener is published from, on
  ``127.0.0.1:B+n`` of the host (``ClusterSpec.client_port``). The fault proxy forwards
  to that port and every broker advertises the proxy's port, exactly as on the embedded
  cluster, so clients on this machine reach the brokers only through the proxy;
- ``cluster``: an *internal* network (no gateway, never carries the published ports)
  for replication and the KRaft quorum, with a fixed address per node. Disconnecting a
  node from it is the network-partition fault: the node keeps its clients and loses its
  peers, as the embedded cluster's nftables rules do; reconnecting gives it its address
  back.

Process faults are the containers' own: ``docker kill`` (SIGKILL to the broker, which
is the container's process), ``docker pause`` (the cgroup freezer: every thread stopped,
sockets open) and ``docker start`` on the same container, so a node restarts on its data.

The control methods match :class:`verifier.harness.cluster.LocalCluster` (node_state,
kill_node, pause_node, resume_node, start_node, stop_node, wait_ready, pids), which is
what the fault handlers and the run's recovery call.
"""

from __future__ import annotations

import ipaddress
import time
from pathlib import Path

from verifier.harness.cluster.config import HOST, ClusterSpec, broker_properties, render_properties
from verifier.harness.cluster.folder import new_cluster_id
from verifier.harness.kafka_wire import metadata_brokers
from verifier.rundata.errors import ClusterError, EnvironmentProblem
from verifier.rundata.waiting import GiveUp, wait_until

#: label on every container and network of one environment, with its name as value
LABEL = "org.delivery-verifier.environment"
#: ports inside a container
CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT = 9092, 9093, 9094
DATA_DIR = "/var/lib/kafka/data"
READY_TIMEOUT = 180.0


def node_properties(spec: ClusterSpec, node: int, addresses: dict[int, str]) -> dict[str, str]:
    """``server.properties`` of node ``node`` in a container: the embedded cluster's
    settings (:func:`broker_properties`), with the listeners bound inside the container,
    replication and the quorum on the cluster network's fixed addresses, and the client
    listener advertising the host's proxy port."""
    props = broker_properties(spec, node, DATA_DIR)
    props["listeners"] = (f"EXTERNAL://0.0.0.0:{CLIENT_PORT},INTERNAL://0.0.0.0:{INTERNAL_PORT},"
                          f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}")
    props["advertised.listeners"] = (f"EXTERNAL://{HOST}:{spec.advertised_port(node)},"
                                     f"INTERNAL://{addresses[node]}:{INTERNAL_PORT}")
    props["controller.quorum.voters"] = ",".join(
        f"{n}@{addresses[n]}:{CONTROLLER_PORT}" for n in spec.node_ids)
    return props


def free_subnet(client, name: str) -> ipaddress.IPv4Network:
    """A subnet the engine's own pool would give a new network now (so it overlaps
    nothing the engine knows of): a throwaway network is created and removed. Fixed
    node addresses need a network created with an explicit subnet."""
    probe = client.networks.create(f"{name}-probe", driver="bridge", internal=True,
                                   labels={LABEL: name})
    try:
        probe.reload()
        configs = probe.attrs.get("IPAM", {}).get("Config") or []
        subnets = [ipaddress.ip_network(c["Subnet"]) for c in configs if "Subnet" in c]
        v4 = [s for s in subnets if s.version == 4]
        if not v4:
            raise EnvironmentProblem(f"the Docker engine gave network {probe.name} no IPv4 "
                                     "subnet")
        return v4[0]
    finally:
        probe.remove()


class DockerCluster:
    """Create, start, signal and remove the containers of one cluster."""

    def __init__(self, spec: ClusterSpec, image: str, name: str, log_dir: Path) -> None:
        import docker

        self.spec = spec
        self.image = image
        self.name = name
        self.log_dir = Path(log_dir)
        self.cluster_id = new_cluster_id()
        self.client = docker.from_env()
        self.containers: dict[int, object] = {}  # node -> testcontainers DockerContainer
        self.clients_net = None
        self.cluster_net = None
        self.addresses: dict[int, str] = {}
        self.cut: set[int] = set()

    # ----- life cycle ------------------------------------------------------------------

    def remove_leftovers(self) -> list[str]:
        """Containers and networks of an earlier environment with this name (a killed
        run): removed, and named in the return value."""
        removed = []
        for c in self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.name}"}):
            c.remove(force=True)
            removed.append(f"container {c.name}")
        for n in self.client.networks.list(filters={"label": f"{LABEL}={self.name}"}):
            n.remove()
            removed.append(f"network {n.name}")
        return removed

    def create(self) -> None:
        """The two networks and every node's container, started; not waiting for ready."""
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.network import Network

        labels = {LABEL: self.name}
        subnet = free_subnet(self.client, self.name)
        self.cluster_net = self.client.networks.create(
            f"{self.name}-cluster", driver="bridge", internal=True, labels=labels,
            ipam=_ipam(subnet))
        hosts = list(subnet.hosts())
        self.addresses = {n: str(hosts[10 + n]) for n in self.spec.node_ids}
        clients = Network(docker_network_kw={"labels": labels, "driver": "bridge"})
        clients.name = f"{self.name}-clients"
        self.clients_net = clients.create()
        for n in self.spec.node_ids:
            props = render_properties(node_properties(self.spec, n, self.addresses))
            heap = self.spec.heap_mb
            container = (
                DockerContainer(self.image)
                .with_name(f"{self.name}-kafka-{n}")
                .with_network(clients)
                .with_network_aliases(f"kafka-{n}")
                .with_env("KAFKA_NODE_PROPERTIES", props)
                .with_env("KAFKA_CLUSTER_ID", self.cluster_id)
                .with_env("KAFKA_HEAP_OPTS", f"-Xms{min(heap, 256)}m -Xmx{heap}m")
                .with_kwargs(labels={**labels, "org.delivery-verifier.node": str(n)},
                             hostname=f"kafka-{n}")
            )
            # published on the host's loopback only (testcontainers binds every address)
            container.ports[f"{CLIENT_PORT}/tcp"] = (HOST, self.spec.client_port(n))
            self.containers[n] = container
        try:
            for n, container in self.containers.items():
                container.start()
                # the broker starts formatting its storage meanwhile (a JVM run of a
                # second or two); until its cluster address is there its quorum
                # connections fail and are retried
                self.cluster_net.connect(container.get_wrapped_container().id,
                                         ipv4_address=self.addresses[n],
                                         aliases=[f"kafka-{n}"])
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Every container (its log saved first) and both networks."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for n, container in self.containers.items():
            wrapped = _started(container)
            if wrapped is None:  # never created
                continue
            try:
                (self.log_dir / f"kafka-{n}.log").write_bytes(wrapped.logs())
            except Exception:  # noqa: BLE001 - the log is a courtesy; removal must go on
                pass
            container.stop(force=True, delete_volume=True)
        self.containers.clear()
        for net in (self.cluster_net, self.clients_net):
            if net is not None:
                try:
                    net.remove()
                except Exception as exc:  # noqa: BLE001 - the next run removes it by label
                    raise ClusterError(f"cannot remove network {net.name}: {exc}") from exc
        self.cluster_net = self.clients_net = None

    # ----- per-node control (LocalCluster's interface) ---------------------------------

    def _wrapped(self, node: int):
        container = self.containers.get(node)
        wrapped = None if container is None else _started(container)
        if wrapped is None:
            raise ClusterError(f"node {node} has no container")
        wrapped.reload()
        return wrapped

    def node_state(self, node: int) -> str:
        """running | paused | dead (exited) | stopped (never started)."""
        try:
            state = self._wrapped(node).attrs["State"]
        except ClusterError:
            return "stopped"
        if state.get("Paused"):
            return "paused"
        if state.get("Running"):
            return "running"
        return "stopped" if state.get("Status") == "created" else "dead"

    @property
    def pids(self) -> dict[int, int | None]:
        """The broker's process id on the host, per node (None when not running)."""
        out = {}
        for n in self.spec.node_ids:
            try:
                out[n] = self._wrapped(n).attrs["State"].get("Pid") or None
            except ClusterError:
                out[n] = None
        return out

    def live_nodes(self) -> list[int]:
        return [n for n in self.spec.node_ids if self.node_state(n) == "running"]

    def kill_node(self, node: int) -> None:
        """``docker kill`` (SIGKILL): an unclean crash; the container stays, with its data."""
        self._require(node, "running", "paused")
        self._wrapped(node).kill(signal="SIGKILL")
        self._wait_state(node, {"dead"}, 30)

    def stop_node(self, node: int, timeout: float = 30) -> None:
        """``docker stop``: SIGTERM (controlled shutdown), SIGKILL after ``timeout``."""
        if self.node_state(node) in ("dead", "stopped"):
            return
        if self.node_state(node) == "paused":
            self._wrapped(node).unpause()
        self._wrapped(node).stop(timeout=int(timeout))
        self._wait_state(node, {"dead"}, 30)

    def pause_node(self, node: int) -> None:
        """``docker pause``: every process of the container frozen, its sockets open."""
        self._require(node, "running")
        self._wrapped(node).pause()
        self._wait_state(node, {"paused"}, 10)

    def resume_node(self, node: int) -> None:
        self._require(node, "paused")
        self._wrapped(node).unpause()
        self._wait_state(node, {"running"}, 10)

    def start_node(self, node: int) -> int | None:
        """``docker start`` on the node's container: the broker on its existing data."""
        if self.node_state(node) in ("running", "paused"):
            raise ClusterError(f"node {node} is already running")
        self._wrapped(node).start()
        self._wait_state(node, {"running"}, 30)
        return self.pids.get(node)

    def restart_node(self, node: int, timeout: float = READY_TIMEOUT) -> None:
        self.stop_node(node)
        self.start_node(node)
        self.wait_ready(timeout=timeout)

    def _require(self, node: int, *states: str) -> None:
        state = self.node_state(node)
        if state not in states:
            raise ClusterError(f"node {node} is {state}, not {' or '.join(states)}")

    def _wait_state(self, node: int, states: set[str], timeout: float) -> None:
        wait_until(lambda: (self.node_state(node) in states, self.node_state(node)),
                   timeout=timeout, what=f"container of node {node}",
                   expected=" or ".join(sorted(states)), interval=0.05)

    # ----- network partition -----------------------------------------------------------

    def disconnect(self, node: int) -> dict:
        """Cut ``node`` off the cluster network (its peers), keeping its clients."""
        self.cluster_net.disconnect(self._wrapped(node).id, force=True)
        self.cut.add(node)
        return {"isolated": node, "network": self.cluster_net.name,
                "address": self.addresses[node], "how": "docker network disconnect"}

    def reconnect(self, node: int) -> dict:
        self.cluster_net.connect(self._wrapped(node).id, ipv4_address=self.addresses[node],
                                 aliases=[f"kafka-{node}"])
        self.cut.discard(node)
        return {"healed": node, "network": self.cluster_net.name,
                "address": self.addresses[node]}

    def reconnect_all(self) -> dict:
        healed = sorted(self.cut)
        for node in healed:
            self.reconnect(node)
        return {"reconnected": healed}

    # ----- readiness -------------------------------------------------------------------

    def log_tail(self, node: int, lines: int = 20) -> str:
        try:
            text = self._wrapped(node).logs(tail=lines).decode(errors="replace")
        except Exception:  # noqa: BLE001 - best effort for an error message
            return ""
        return text.strip()

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Every running node answers Metadata on its published client port and lists
        every running node (the embedded cluster's readiness, through the same ports)."""
        def probe():
            dead = [n for n in self.spec.node_ids if self.node_state(n) == "dead"]
            expected = set(self.live_nodes())
            if dead and not expected:
                tails = "\n".join(f"node {n}: {self.log_tail(n, 5)}" for n in dead)
                raise GiveUp(ClusterError(f"every container exited before the cluster was "
                                          f"ready:\n{tails}"))
            view: dict[int, object] = {}
            for n in expected:
                try:
                    view[n] = sorted(b.node_id for b in metadata_brokers(
                        HOST, self.spec.client_port(n)))
                except OSError as exc:
                    view[n] = f"{type(exc).__name__}: {exc}"
            ok = bool(expected) and all(isinstance(v, list) and expected <= set(v)
                                        for v in view.values())
            return ok, {"dead": dead, "metadata": view}

        def describe(obs):
            text = f"metadata per node {obs['metadata']}"
            for n in obs["dead"]:
                text += f"; node {n} exited, log tail: {self.log_tail(n, 3)!r}"
            return text

        wait_until(probe, timeout=timeout, what="the Kafka containers to be ready",
                   expected=f"every running node {sorted(self.live_nodes())} listed by every "
                            "running node", describe=describe, interval=0.5)

    def start(self, timeout: float = READY_TIMEOUT) -> float:
        """Create everything and wait until ready; returns the seconds it took."""
        t0 = time.monotonic()
        self.create()
        try:
            self.wait_ready(timeout=timeout)
        except BaseException:
            self.remove()
            raise
        return time.monotonic() - t0


def _started(container):
    """The docker SDK container behind a testcontainers one, None before its start."""
    from testcontainers.core.exceptions import ContainerStartException

    try:
        return container.get_wrapped_container()
    except ContainerStartException:
        return None


def _ipam(subnet: ipaddress.IPv4Network):
    from docker.types import IPAMConfig, IPAMPool

    return IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet))])
