"""Start and stop the fault proxy as its own OS process, in front of a local cluster.

Ports follow the cluster's plan: the proxy for node n listens on ``B + 300 + n``
(``ClusterSpec.proxy_port``) and its control interface on ``B + 300``, a port the plan
leaves unused. In front of node n's replication listener it listens on ``B + 310 + n``
(``ClusterSpec.internal_proxy_port``) only once asked (:meth:`ProxyProcess.route_replication`,
before the cluster advertises those ports: ``replication_proxied``): clusters whose base
ports are 4 apart (the test tier's slots) would otherwise share them.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from verifier.harness.cluster import ClusterSpec
from verifier.harness.cluster.processes import port_in_use
from verifier.harness.faults.control import ProxyClient, ProxyControlError
from verifier.harness.procs import ManagedProcess
from verifier.rundata.errors import EnvironmentProblem
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.waiting import wait_until

START_TIMEOUT = 30.0


def proxied(spec: ClusterSpec) -> ClusterSpec:
    """The same cluster with every broker advertising its proxy port to clients."""
    return dataclasses.replace(spec, advertised_ports={n: spec.proxy_port(n)
                                                       for n in spec.node_ids})


def control_port(spec: ClusterSpec) -> int:
    return spec.base_port + 300


class ProxyProcess:
    """The proxy process for one cluster spec, with its log files in ``workdir``."""

    def __init__(self, spec: ClusterSpec, workdir: Path) -> None:
        self.spec = spec
        self.workdir = Path(workdir)
        self.connection_log = self.workdir / "connections.jsonl"
        routes = [f"{n}={spec.proxy_port(n)}:{spec.client_port(n)}" for n in spec.node_ids]
        argv = [sys.executable, "-m", "verifier.harness.faults.proxy",
                "--control-port", str(control_port(spec)),
                "--connection-log", str(self.connection_log)]
        for r in routes:
            argv += ["--route", r]
        self.process = ManagedProcess("fault-proxy", argv, self.workdir / "proxy.log",
                                      cwd=PROJECT_ROOT)
        self.client = ProxyClient(control_port(spec))

    def ports(self) -> list[int]:
        return [control_port(self.spec), *(self.spec.proxy_port(n) for n in self.spec.node_ids)]

    def route_replication(self) -> None:
        """Listen in front of every node's replication listener too (B + 310 + n), from
        now on: before the cluster advertises those ports."""
        try:
            self.client.add_internal_routes({n: (self.spec.internal_proxy_port(n),
                                                 self.spec.internal_port(n))
                                             for n in self.spec.node_ids})
        except ProxyControlError as exc:
            raise EnvironmentProblem(f"the proxy cannot listen in front of the replication "
                                     f"listeners: {exc}") from exc

    def start(self, timeout: float = START_TIMEOUT) -> ProxyClient:
        """Start the process and wait until its control interface answers."""
        taken = [p for p in self.ports() if port_in_use(p)]
        if taken:
            raise EnvironmentProblem(
                f"proxy ports {taken} are in use; stop what holds them or choose another "
                "base port")
        self.process.start()

        def probe():
            if not self.process.alive:
                return True, "exited"  # stop waiting; reported below
            return True, self.client.status()

        try:
            seen = wait_until(probe, timeout=timeout, what="the fault proxy to answer",
                              expected=f"GET /status on port {control_port(self.spec)}",
                              interval=0.1)
            if seen == "exited":
                raise EnvironmentProblem(
                    f"the fault proxy exited ({self.process.returncode}): "
                    f"{self.process.log_tail(5)}")
        except BaseException:
            self.stop()
            raise
        return self.client

    def stop(self) -> None:
        self.process.terminate(timeout=10)

    def __enter__(self) -> ProxyClient:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
