"""What a chaos run is asked to do: the flags of `verifier chaos` as one plain value.

The command line builds a :class:`ChaosRequest` from its flags; `verifier shrink` builds
one from a run's plan (:func:`verifier.api.request_from_plan`); :meth:`ChaosRequest.argv`
writes one back as the flags that run it again. Values stay as the user gives them (comma
lists, durations as text): :func:`verifier.api.prepare` checks them all at once.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata.jvm import PROJECT_ROOT

#: the local cluster of a chaos run (its folder is deleted when the run ends)
DEFAULT_STATE = PROJECT_ROOT / ".state" / "chaos"
#: the ports of the run's local cluster: clients BASE+n, proxy BASE+300+n
DEFAULT_BASE_PORT = 9700


@dataclass(frozen=True)
class ChaosRequest:
    """The scenarios to run and how: every field is the `verifier chaos` flag of its name
    (``scenarios``: ``--scenario``, repeatable), with the same default."""

    profile: str = "full"
    scenarios: tuple[str, ...] = ()
    seed: int = 1
    repeat: int = 1
    producer_config: Path | None = None
    client: str = "kafka-python"
    clients: str | None = None
    kafka_version: str | None = None
    kafka_versions: str | None = None
    bootstrap_servers: str | None = None
    keep_topics: bool = False
    environment: str = "embedded"
    spark_master: str | None = None
    spark_conf: tuple[str, ...] = ()
    spark_cluster: str | None = None
    sink: str | None = None
    pipeline: str | None = None
    pipeline_guarantee: str | None = None
    spark_version: str | None = None
    app: str | None = None
    app_guarantee: str | None = None
    #: how a command's output is judged: ``identity`` (None: the default) or ``reference``
    app_oracle: str | None = None
    app_instances: int | None = None
    #: ``classic,consumer``: each consumer-group application once per protocol
    group_protocol: str | None = None
    out: Path = Path("runs")
    fail_fast: bool = False
    duration: str | None = None
    selftest: bool = False
    base_port: int = DEFAULT_BASE_PORT
    state_dir: Path = DEFAULT_STATE
    #: the user's transactional and group ids as they are (verifier.rundata.naming)
    use_my_ids: bool = False

    def argv(self) -> list[str]:
        """The `verifier chaos` arguments that run what this request names, the way it
        names it (scenarios, seed, clients, producer config, pipelines, cluster, Spark
        master); where it writes and which ports it takes are left to whoever runs it."""
        argv = [flag for name in self.scenarios for flag in ("--scenario", str(name))]
        if self.profile != "full":
            argv += ["--profile", self.profile]
        argv += ["--seed", str(self.seed)]
        if self.repeat != 1:
            argv += ["--repeat", str(self.repeat)]
        if self.clients is not None:
            argv += ["--clients", self.clients]
        elif self.client != "kafka-python":
            argv += ["--client", self.client]
        if self.producer_config is not None:
            argv += ["--producer-config", str(self.producer_config)]
        if self.use_my_ids:
            argv.append("--use-my-ids")
        if self.pipeline is not None:
            argv += ["--pipeline", self.pipeline]
        if self.pipeline_guarantee is not None:
            argv += ["--pipeline-guarantee", self.pipeline_guarantee]
        if self.app is not None:
            argv += ["--app", self.app]
        if self.app_guarantee is not None:
            argv += ["--app-guarantee", self.app_guarantee]
        if self.app_oracle is not None:
            argv += ["--app-oracle", self.app_oracle]
        if self.app_instances is not None:
            argv += ["--app-instances", str(self.app_instances)]
        if self.group_protocol is not None:
            argv += ["--group-protocol", self.group_protocol]
        if self.bootstrap_servers is not None:
            argv += ["--bootstrap-servers", self.bootstrap_servers]
        if self.environment != "embedded":
            argv += ["--environment", self.environment]
        if self.kafka_version is not None:
            argv += ["--kafka-version", self.kafka_version]
        if self.spark_master is not None:
            argv += ["--spark-master", self.spark_master]
        return argv

    def command(self) -> str:
        """:meth:`argv` as the shell command a user types."""
        return "verifier chaos " + shlex.join(self.argv())
