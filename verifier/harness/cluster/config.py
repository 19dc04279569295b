"""Pure configuration of a local KRaft cluster: ports and broker properties.

Port plan for node n (1-based) with base port B (default 9100):

    client listener (EXTERNAL)     B + n        what clients reach, possibly via a proxy
    replication (INTERNAL)         B + 100 + n  broker to broker, direct unless
                                                ``replication_proxied``
    controller (CONTROLLER)        B + 200 + n  KRaft quorum, never proxied
    fault proxy (suggested)        B + 300 + n  see verifier.harness.faults
    proxy of replication           B + 310 + n  advertised on INTERNAL when
                                                ``replication_proxied``

A broker answers Metadata with the endpoints of the listener the request arrived on, so
advertising the proxy port on EXTERNAL makes every client connection pass the proxy while
replication and the quorum go direct. ``replication_proxied`` advertises the proxy's
replication port on INTERNAL too (a scenario's ``proxy_replication`` option): then every
broker-to-broker request (replication, the coordinator's WriteTxnMarkers, the leaders'
partition verification) passes the proxy, which faults of the inter-broker path need.

With ``sasl_plain_users`` the client listener is SASL_PLAINTEXT with the PLAIN mechanism
and those users (an unauthenticated client is refused), as a secured cluster a user
brings; replication and the quorum stay PLAINTEXT, and the tool's own readiness probe
asks the replication listener.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifier.rundata import jvm
from verifier.rundata.errors import UsageError

HOST = "127.0.0.1"


@dataclass(frozen=True)
class ClusterSpec:
    nodes: int = 3
    base_port: int = 9100
    #: node id -> port advertised on the client listener; default: the listener itself
    advertised_ports: dict[int, int] = field(default_factory=dict)
    heap_mb: int = 512
    #: extra broker properties applied to every node, after the defaults
    overrides: dict[str, str] = field(default_factory=dict)
    #: if set, node n runs as Unix uid ``node_uid_base + n`` (as root only): on one
    #: loopback every connection's source is 127.0.0.1, so a network partition can
    #: tell brokers apart only by socket owner (nftables ``meta skuid``)
    node_uid_base: int | None = None
    #: user -> password: the client listener (EXTERNAL) takes SASL_PLAINTEXT with PLAIN
    sasl_plain_users: dict[str, str] = field(default_factory=dict)
    #: the broker release every node runs (KRaft, 3.3 to 4.x; default KAFKA_VERSION):
    #: its jars are .jars/broker-<version>, and the properties and logging follow it
    kafka_version: str = field(default_factory=jvm.kafka_version)
    #: advertise the proxy's replication port on INTERNAL (B + 310 + n): broker-to-broker
    #: traffic passes the proxy too
    replication_proxied: bool = False

    def __post_init__(self) -> None:
        try:
            jvm.parse_kafka_version(self.kafka_version)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        if self.nodes not in (1, 3):
            raise ValueError(f"nodes must be 1 or 3, not {self.nodes}")
        if not 1024 <= self.base_port <= 65535 - 400:
            raise ValueError(f"base port {self.base_port} leaves no room for the port plan")
        unknown = set(self.advertised_ports) - set(self.node_ids)
        if unknown:
            raise ValueError(f"advertised ports given for unknown node ids {sorted(unknown)}")

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.nodes + 1))

    def client_port(self, node: int) -> int:
        return self.base_port + node

    def internal_port(self, node: int) -> int:
        return self.base_port + 100 + node

    def controller_port(self, node: int) -> int:
        return self.base_port + 200 + node

    def proxy_port(self, node: int) -> int:
        return self.base_port + 300 + node

    def internal_proxy_port(self, node: int) -> int:
        return self.base_port + 310 + node

    def advertised_internal_port(self, node: int) -> int:
        return self.internal_proxy_port(node) if self.replication_proxied else \
            self.internal_port(node)

    def node_uid(self, node: int) -> int | None:
        return None if self.node_uid_base is None else self.node_uid_base + node

    @property
    def client_protocol(self) -> str:
        return "SASL_PLAINTEXT" if self.sasl_plain_users else "PLAINTEXT"

    def probe_port(self, node: int) -> int:
        """A PLAINTEXT port of ``node`` that answers Metadata (readiness probes)."""
        return self.internal_port(node) if self.sasl_plain_users else self.client_port(node)

    def advertised_port(self, node: int) -> int:
        return self.advertised_ports.get(node, self.client_port(node))

    def ports(self, node: int) -> list[int]:
        """Ports node ``node`` binds (the proxy port belongs to the proxy)."""
        return [self.client_port(node), self.internal_port(node), self.controller_port(node)]

    def bootstrap_servers(self) -> str:
        """What clients use: the advertised (possibly proxied) client endpoints."""
        return ",".join(f"{HOST}:{self.advertised_port(n)}" for n in self.node_ids)

    def direct_bootstrap_servers(self) -> str:
        """The brokers' own client listeners, bypassing any proxy."""
        return ",".join(f"{HOST}:{self.client_port(n)}" for n in self.node_ids)

    def quorum_voters(self) -> str:
        return ",".join(f"{n}@{HOST}:{self.controller_port(n)}" for n in self.node_ids)

    @property
    def replication_factor(self) -> int:
        return min(3, self.nodes)

    @property
    def min_insync_replicas(self) -> int:
        # RF 3 with min ISR 2: acks=all keeps working with one node down.
        return 2 if self.nodes >= 3 else 1

    def to_json(self) -> dict:
        return {
            "nodes": self.nodes,
            "base_port": self.base_port,
            "advertised_ports": {str(k): v for k, v in self.advertised_ports.items()},
            "heap_mb": self.heap_mb,
            "overrides": dict(self.overrides),
            "node_uid_base": self.node_uid_base,
            "sasl_plain_users": dict(self.sasl_plain_users),
            "kafka_version": self.kafka_version,
            **({"replication_proxied": True} if self.replication_proxied else {}),
        }

    @classmethod
    def from_json(cls, data: dict) -> ClusterSpec:
        return cls(
            nodes=int(data["nodes"]),
            base_port=int(data["base_port"]),
            advertised_ports={int(k): int(v) for k, v in data.get("advertised_ports", {}).items()},
            heap_mb=int(data.get("heap_mb", 512)),
            overrides=dict(data.get("overrides", {})),
            node_uid_base=data.get("node_uid_base"),
            sasl_plain_users=dict(data.get("sasl_plain_users") or {}),
            # a folder written before versions were recorded ran the default
            kafka_version=data.get("kafka_version") or jvm.DEFAULT_KAFKA_VERSION,
            replication_proxied=bool(data.get("replication_proxied", False)),
        )


def broker_properties(spec: ClusterSpec, node: int, data_dir: str) -> dict[str, str]:
    """The ``server.properties`` of one combined broker+controller node."""
    if node not in spec.node_ids:
        raise ValueError(f"node {node} is not in a {spec.nodes}-node cluster")
    rf = str(spec.replication_factor)
    min_isr = str(spec.min_insync_replicas)
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node),
        # Static quorum: simplest for 1-3 test nodes; format needs no quorum flags.
        "controller.quorum.voters": spec.quorum_voters(),
        "listeners": (
            f"EXTERNAL://{HOST}:{spec.client_port(node)},"
            f"INTERNAL://{HOST}:{spec.internal_port(node)},"
            f"CONTROLLER://{HOST}:{spec.controller_port(node)}"
        ),
        # No CONTROLLER entry with a static quorum.
        "advertised.listeners": (
            f"EXTERNAL://{HOST}:{spec.advertised_port(node)},"
            f"INTERNAL://{HOST}:{spec.advertised_internal_port(node)}"
        ),
        "listener.security.protocol.map": (
            f"EXTERNAL:{spec.client_protocol},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
        ),
        "inter.broker.listener.name": "INTERNAL",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": data_dir,
        "num.partitions": "1",
        "default.replication.factor": rf,
        "min.insync.replicas": min_isr,
        # Topics are created explicitly by the tool; a typo must not create one.
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "4",
        # Both RF *and* min ISR must fit the node count, else init_transactions() times out.
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "4",
        # A killed transactional producer holds read_committed readers back until its
        # transaction times out; scan for expired ones every second, not every 10 s.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        "group.initial.rebalance.delay.ms": "0",
        # Followers that fall behind leave the ISR after 5 s (default 30 s), so faults
        # show ISR shrink and recovery within a short run.
        "replica.lag.time.max.ms": "5000",
        "unclean.leader.election.enable": "false",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.segment.bytes": str(64 * 1024 * 1024),
        # The retention check every second (default 5 minutes, and not a dynamic
        # setting): the retention fault's short topic retention deletes within its
        # window (verifier.harness.faults.kinds.retention). Under the default 7-day retention a
        # check only compares a few segments' timestamps.
        "log.retention.check.interval.ms": "1000",
    }
    if jvm.parse_kafka_version(spec.kafka_version)[0] >= 4:
        # share groups' state topic (KIP-932) exists from 4.0 on; 3.x brokers only warn
        # about unknown keys, but each version gets only the keys it knows
        props["share.coordinator.state.topic.replication.factor"] = rf
        props["share.coordinator.state.topic.min.isr"] = min_isr
        # KIP-848 and KIP-932 groups take their session timeout from the group's config,
        # bounded below by these (default 45 s): the application presets set 10 s on
        # their groups, as the classic copiers set it on the client (docs/applications.md);
        # a group that sets nothing keeps the 45 s default
        props["group.consumer.min.session.timeout.ms"] = "10000"
        props["group.share.min.session.timeout.ms"] = "10000"
    if spec.sasl_plain_users:
        users = " ".join(f'user_{u}="{pw}"' for u, pw in sorted(spec.sasl_plain_users.items()))
        props["sasl.enabled.mechanisms"] = "PLAIN"
        props["listener.name.external.plain.sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};")
    props.update(spec.overrides)
    return props


def render_properties(props: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def jvm_options(spec: ClusterSpec, log_dir: str) -> list[str]:
    """The broker JVM's flags; its logging configuration follows the version: Log4j 1
    (reload4j, ``-Dlog4j.configuration``) on 3.x, Log4j 2 on 4.x."""
    heap = f"{spec.heap_mb}m"
    if jvm.uses_log4j1(spec.kafka_version):
        logging = f"-Dlog4j.configuration=file:{jvm.LOG4J1_CONFIG}"
    else:
        logging = f"-Dlog4j2.configurationFile={jvm.LOG4J_CONFIG}"
    return [
        f"-Xms{min(spec.heap_mb, 256)}m",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={log_dir}",
        logging,
    ]
