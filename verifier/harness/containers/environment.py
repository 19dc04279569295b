"""The docker environment of a chaos run: the embedded environment's cluster, in containers.

Same port plan, same proxy, same faults as :class:`verifier.harness.environment.
LocalEnvironment`; what differs is where the brokers run (containers of the image built
from the same Maven jars, :mod:`.image`) and how the broker faults act on them:

- broker-kill: ``docker kill`` then ``docker start`` (embedded: SIGKILL the JVM, start it);
- broker-pause: ``docker pause`` / ``unpause``, the cgroup freezer (embedded: SIGSTOP/SIGCONT);
- network-partition: ``docker network disconnect`` from the cluster network (embedded:
  nftables rules in a private network namespace);
- the proxy faults (ack loss, latency, reset, hold): the same proxy, in front of the
  published ports.

Every client connection still passes the proxy: each container publishes its client
listener on ``127.0.0.1:B+n`` only and advertises the proxy's ``B+300+n``.
"""

from __future__ import annotations

import time
from pathlib import Path

from verifier.harness.cluster import ClusterSpec
from verifier.harness.containers.cluster import DockerCluster
from verifier.harness.containers.engine import require_engine
from verifier.harness.environment import recover_nodes
from verifier.harness.faults import kinds
from verifier.harness.faults.kinds import FaultEnv
from verifier.harness.faults.proxy_process import ProxyProcess, proxied


class ContainerPartition:
    """The network-partition fault's interface (cut, heal, heal_all) on containers."""

    def __init__(self, cluster: DockerCluster) -> None:
        self.cluster = cluster

    def cut(self, node: int) -> dict:
        return self.cluster.disconnect(node)

    def heal(self, node: int) -> dict:
        return self.cluster.reconnect(node)

    def heal_all(self) -> dict:
        return self.cluster.reconnect_all()


class DockerEnvironment:
    """A proxied cluster of containers for the duration of a ``with`` block."""

    name = "docker"

    def __init__(self, state_dir: Path, base_port: int = 9700, nodes: int = 3,
                 kafka_version: str | None = None, say=print) -> None:
        self.spec = proxied(ClusterSpec(nodes=nodes, base_port=base_port))
        self.state_dir = Path(state_dir)
        self.kafka_version = kafka_version
        #: one name per base port: a second environment on other ports never meets it,
        #: a killed run's leftovers on the same ports are found by it
        self.container_name = f"verifier-{base_port}"
        self.proxy_process = ProxyProcess(self.spec, self.state_dir / "proxy")
        self.cluster: DockerCluster | None = None
        self.client_config: dict = {}
        self.say = say
        #: what the last start cost: image (built or reused) and cluster, in seconds
        self.timings: dict[str, float] = {}
        self.image = None

    @property
    def connection_log(self) -> Path | None:
        return self.proxy_process.connection_log

    def __enter__(self) -> DockerEnvironment:
        import docker

        from verifier.harness.containers.image import kafka_image

        require_engine()
        client = docker.from_env()
        try:
            self.image = kafka_image(client, self.kafka_version, log=self.say)
        finally:
            client.close()
        self.timings["image_s"] = round(self.image.seconds, 2)
        self.cluster = DockerCluster(self.spec, self.image.tag, self.container_name,
                                     self.state_dir / "logs")
        for what in self.cluster.remove_leftovers():
            self.say(f"removed {what} left by an earlier run")
        self.proxy_process.start()
        t0 = time.monotonic()
        try:
            self.cluster.start()
        except BaseException:
            self.cluster = None
            self.proxy_process.stop()
            raise
        self.timings["cluster_s"] = round(time.monotonic() - t0, 2)
        self.say(f"docker environment: {self.spec.nodes} containers of {self.image.tag} "
                 f"({'built' if self.image.built else 'reused'} in {self.image.seconds:.1f} s) "
                 f"ready in {self.timings['cluster_s']:.1f} s; clients via the proxy at "
                 f"{self.bootstrap_servers}")
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.cluster is not None:
                self.cluster.remove()
        finally:
            self.cluster = None
            self.proxy_process.stop()

    def own_topics(self, topics: list[str]) -> None:
        """Topics a run created: they go with the containers at the end."""

    @property
    def bootstrap_servers(self) -> str:
        return self.spec.bootstrap_servers()

    @property
    def replication_factor(self) -> int:
        return self.spec.replication_factor

    def skipped_kinds(self) -> set[str]:
        """None: the containers have every part a fault kind acts on."""
        return kinds.skipped({"proxy", "cluster", "partition"})

    def fault_env(self, processes: dict) -> FaultEnv:
        assert self.cluster is not None
        return FaultEnv(bootstrap_servers=self.bootstrap_servers, cluster=self.cluster,
                        proxy=self.proxy_process.client, processes=processes,
                        partition=ContainerPartition(self.cluster),
                        client_config=self.client_config)

    def recover(self, topics: list[str], timeout: float = 180) -> None:
        """Every container running and on the cluster network, every partition of
        ``topics`` in sync."""
        assert self.cluster is not None
        self.cluster.reconnect_all()
        recover_nodes(self, topics, timeout)
