"""The folder one local cluster lives in: ``cluster.json`` plus ``node<N>/`` with each
node's properties, data and logs, formatted with Kafka's ``StorageTool``.

Everything another shell needs to find, control and stop the cluster is in this folder;
:class:`verifier.harness.cluster.local.LocalCluster` runs the processes.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from verifier.harness.cluster.config import ClusterSpec, broker_properties, render_properties
from verifier.rundata import jvm
from verifier.rundata.errors import ClusterError

STATE_FILE = "cluster.json"
STATE_VERSION = 1


def new_cluster_id() -> str:
    """A base64url 16-byte UUID, as ``kafka-storage random-uuid`` prints."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # Kafka rejects ids that look like flags
            return text


def default_state_dir() -> Path:
    return Path(os.environ.get("VERIFIER_STATE_DIR", jvm.PROJECT_ROOT / ".state" / "cluster"))


class ClusterFolder:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def node_dir(self, node: int) -> Path:
        return self.path / f"node{node}"

    def log_file(self, node: int) -> Path:
        return self.node_dir(node) / "logs" / "server.log"

    def properties_file(self, node: int) -> Path:
        return self.node_dir(node) / "server.properties"

    def holds_cluster(self) -> bool:
        return (self.path / STATE_FILE).exists()

    def read(self) -> tuple[ClusterSpec, str, dict[int, int | None]] | None:
        """``(spec, cluster id, pid per node)`` from the state file; ``None`` if absent."""
        path = self.path / STATE_FILE
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            if data.get("version") != STATE_VERSION:
                raise ClusterError(
                    f"{path} has state version {data.get('version')!r}, expected "
                    f"{STATE_VERSION}; run `verifier cluster down --state-dir {self.path}`"
                )
            return (ClusterSpec.from_json(data["spec"]), data["cluster_id"],
                    {int(k): v for k, v in data.get("pids", {}).items()})
        except (ValueError, KeyError) as exc:
            raise ClusterError(f"cannot read cluster state {path}: {exc}") from exc

    def write(self, spec: ClusterSpec, cluster_id: str, pids: dict[int, int | None]) -> None:
        """Replace the state file atomically."""
        self.path.mkdir(parents=True, exist_ok=True)
        data = {
            "version": STATE_VERSION,
            "cluster_id": cluster_id,
            "kafka_version": spec.kafka_version,
            "spec": spec.to_json(),
            "pids": {str(k): v for k, v in pids.items()},
            "bootstrap_servers": spec.bootstrap_servers(),
        }
        tmp = self.path / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.path / STATE_FILE)

    def write_properties(self, spec: ClusterSpec, node: int) -> None:
        """Node ``node``'s ``server.properties`` for ``spec`` (read at its next start)."""
        self.properties_file(node).write_text(render_properties(
            broker_properties(spec, node, str(self.node_dir(node) / "data"))))

    def format(self, spec: ClusterSpec, cluster_id: str, jars: Path,
               jvm_opts: Callable[[int], list[str]]) -> None:
        """Write every node's properties and format its storage (all nodes at once: each
        is a short JVM run). On failure the folder is removed."""
        procs = []
        for n in spec.node_ids:
            d = self.node_dir(n)
            (d / "data").mkdir(parents=True, exist_ok=True)
            (d / "logs").mkdir(parents=True, exist_ok=True)
            self.write_properties(spec, n)
            cmd = [
                jvm.java_executable(), *jvm_opts(n), "-cp", str(jars / "*"),
                "kafka.tools.StorageTool", "format", "-t", cluster_id,
                "-c", str(self.properties_file(n)),
            ]  # fmt: skip
            procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT, text=True)))
        for cmd, proc in procs:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                self.remove()
                raise ClusterError(f"formatting failed: {' '.join(cmd)}\n{out.strip()[-2000:]}")

    def give_node_to(self, node: int, uid: int) -> None:
        """Make a node's folder owned by ``uid`` (a broker run as its own Unix user)."""
        for root, dirs, files in os.walk(self.node_dir(node)):
            for name in (root, *(os.path.join(root, n) for n in dirs + files)):
                os.chown(name, uid, uid)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
