"""Where a chaos run happens: the embedded local cluster, or a user's external one.

The local environment starts the fault proxy first and then a 3-node KRaft cluster whose
brokers advertise the proxy's ports, so every client connection passes the proxy while
replication and the quorum go direct. An external environment only knows bootstrap
servers: the tool creates its own topics there and deletes them when its runs end
(unless told to keep them), and faults that need the local side (proxy rules, broker
signals) are skipped, which the run says.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from verifier.harness.cluster import ClusterSpec, LocalCluster, up
from verifier.harness.faults import kinds
from verifier.harness.faults.kinds import FaultEnv, NotApplied
from verifier.harness.faults.proxy_process import ProxyProcess, proxied
from verifier.harness.leftovers import release
from verifier.harness.topics import admin, delete_topics, wait_in_sync
from verifier.rundata.errors import EnvironmentProblem, VerifierError

log = logging.getLogger(__name__)


def recover_nodes(env, topics: list[str], timeout: float) -> None:
    """After the heal, on an environment's own cluster (local or containers): a paused
    node resumed, a dead or stopped one started, every node ready, the proxy's rules
    cleared, every partition of ``topics`` fully in sync."""
    for n in env.spec.node_ids:
        state = env.cluster.node_state(n)
        if state == "paused":
            env.cluster.resume_node(n)
        elif state in ("dead", "stopped"):
            log.warning("node %s was %s after heal; starting it", n, state)
            env.cluster.start_node(n)
    env.cluster.wait_ready(timeout=timeout)
    env.proxy_process.client.clear_rules()
    wait_in_sync(env.bootstrap_servers, topics, timeout=timeout, **env.client_config)


class LocalEnvironment:
    """A proxied local cluster for the duration of a ``with`` block."""

    name = "local"

    def __init__(self, state_dir: Path, base_port: int = 9700, nodes: int = 3,
                 partitions: bool = False, kafka_version: str | None = None) -> None:
        # Network partitions match brokers by socket owner, so each broker then runs as
        # its own Unix user (uid 61000 + n); only possible inside a private namespace.
        self.partitions = partitions
        uid_base = 61000 if partitions else None
        version = {"kafka_version": kafka_version} if kafka_version else {}
        self.spec = proxied(ClusterSpec(nodes=nodes, base_port=base_port,
                                        node_uid_base=uid_base, **version))
        self.state_dir = Path(state_dir)
        # the proxy's folder (and connection log) is the cluster's own: .state/chaos-proxy
        # for .state/chaos; two runs on two clusters once shared one log
        self.proxy_process = ProxyProcess(self.spec, self.state_dir.with_name(
            f"{self.state_dir.name}-proxy"))
        self.cluster: LocalCluster | None = None
        self.client_config: dict = {}

    @property
    def connection_log(self) -> Path | None:
        """The proxy's connection log (appended to across runs; see docs/faults.md)."""
        return self.proxy_process.connection_log

    def __enter__(self) -> LocalEnvironment:
        existing = LocalCluster.load(self.state_dir)
        if existing is not None:  # a previous run was killed: start clean
            existing.down()
        self.proxy_process.start()
        try:
            self.cluster, _ = up(self.state_dir, self.spec, owned=True)
        except BaseException:
            self.proxy_process.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.cluster is not None:
                self.cluster.down()
        finally:
            self.proxy_process.stop()

    def own_topics(self, topics: list[str]) -> None:
        """Topics a run created: they go with the cluster at the end."""

    @property
    def bootstrap_servers(self) -> str:
        return self.spec.bootstrap_servers()

    @property
    def kafka_version(self) -> str:
        return self.spec.kafka_version

    def use_broker_settings(self, settings: dict[str, str],
                            replication_proxied: bool = False) -> str | None:
        """Run the brokers with these start-time settings (a scenario's ``[broker]``
        table; ``{}``: the defaults), their replication listener through the proxy or
        not (a scenario's ``proxy_replication``): the nodes restart one by one when the
        running ones differ. Each key must be one the brokers' version knows. Returns a
        note for the run, or None when nothing was done."""
        from verifier.harness.broker_config import check_known

        assert self.cluster is not None
        if replication_proxied:
            self.proxy_process.route_replication()
        restarted = self.cluster.reconfigure(settings, replication_proxied=replication_proxied)
        self.spec = self.cluster.spec
        if settings:
            check_known(self.bootstrap_servers, settings, self.kafka_version,
                        **self.client_config)
        if not restarted:
            return None
        what = ", ".join(f"{k}={v}" for k, v in sorted(settings.items())) or "the defaults"
        via = ", replication through the proxy" if replication_proxied else ""
        return f"brokers restarted one by one with {what}{via}"

    @property
    def replication_factor(self) -> int:
        return self.spec.replication_factor

    def skipped_kinds(self) -> set[str]:
        """The fault kinds this environment cannot run: a network partition needs the
        run's own network namespace (``partitions``)."""
        parts = {"proxy", "cluster"} | ({"partition"} if self.partitions else set())
        return kinds.skipped(parts)

    def fault_env(self, processes: dict) -> FaultEnv:
        from verifier.harness.faults.partition import Partition

        return FaultEnv(bootstrap_servers=self.bootstrap_servers, cluster=self.cluster,
                        proxy=self.proxy_process.client, processes=processes,
                        partition=Partition(self.spec) if self.partitions else None,
                        client_config=self.client_config)

    def recover(self, topics: list[str], timeout: float = 180) -> None:
        """Every node running and ready, every partition of ``topics`` fully in sync."""
        assert self.cluster is not None
        recover_nodes(self, topics, timeout)


class ExternalEnvironment:
    """A cluster the user runs; only client-side faults apply."""

    name = "external"

    def __init__(self, bootstrap_servers: str, client_config: dict | None = None,
                 keep_topics: bool = False, out=None) -> None:
        self._bootstrap = bootstrap_servers
        self.client_config = dict(client_config or {})
        self._brokers = 0
        self.connection_log = None  # no proxy in front of a user's cluster
        self.keep_topics = keep_topics
        self.out = out or sys.stdout
        self.topics: list[str] = []  # created here by the runs, deleted at the end

    def __enter__(self) -> ExternalEnvironment:
        try:
            with admin(self._bootstrap, **self.client_config) as a:
                self._brokers = len(a.describe_cluster()["brokers"])
        except VerifierError:
            raise
        except Exception as exc:  # noqa: BLE001 - kafka-python's many errors: one line
            raise EnvironmentProblem(f"cannot use the cluster at {self._bootstrap}: "
                                     f"{type(exc).__name__}: {exc}") from None
        return self

    def __exit__(self, *exc) -> None:
        """The runs' topics (their records, the runs' evidence while they ran) are
        deleted, on an error or a stop too; ``keep_topics`` keeps them."""
        if not self.topics:
            return
        what = f"the runs' {len(self.topics)} topics on {self._bootstrap}"
        if self.keep_topics:
            print(f"kept {what}: {', '.join(self.topics)}", file=self.out, flush=True)
            release(self._bootstrap)  # kept on purpose: not a killed run's leftovers
            return
        try:
            delete_topics(self._bootstrap, self.topics, timeout=30, **self.client_config)
        except Exception as exc:  # noqa: BLE001 - one line, the verdicts stand
            print(f"could not delete {what} ({type(exc).__name__}: {exc}); delete them "
                  f"yourself: {', '.join(self.topics)}", file=self.out, flush=True)
            return
        print(f"deleted {what} (--keep-topics keeps them)", file=self.out, flush=True)
        self.topics = []
        release(self._bootstrap)

    def own_topics(self, topics: list[str]) -> None:
        """Topics a run created here: deleted when the environment closes."""
        self.topics += [t for t in topics if t not in self.topics]

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    #: the tool cannot tell an external cluster's release (the protocol does not say)
    kafka_version = "external"

    def use_broker_settings(self, settings: dict[str, str],
                            replication_proxied: bool = False) -> str | None:
        if settings:
            raise NotApplied("start-time [broker] settings need the local cluster (the "
                             "tool cannot restart an external cluster's brokers); use "
                             "apply = \"dynamic\"")
        if replication_proxied:
            raise NotApplied("proxy_replication needs the local cluster (its brokers "
                             "advertise the proxy on their replication listener)")
        return None

    @property
    def replication_factor(self) -> int:
        return min(3, self._brokers)

    def skipped_kinds(self) -> set[str]:
        """Every kind that needs the proxy, the brokers' processes or a partition: a
        user's cluster has none of them here."""
        return kinds.skipped(set())

    def fault_env(self, processes: dict) -> FaultEnv:
        return FaultEnv(bootstrap_servers=self._bootstrap, processes=processes,
                        client_config=self.client_config)

    def recover(self, topics: list[str], timeout: float = 180) -> None:
        wait_in_sync(self._bootstrap, topics, timeout=timeout, **self.client_config)
