"""The pytest plugin: gate your own CI on the delivery guarantee your producer needs.

Installed with the package (entry point ``pytest11``), so any test suite in an
environment where delivery-verifier is installed gets three fixtures:

- ``kafka_cluster`` (session): a running, proxied 3-node KRaft cluster, embedded (one
  JVM per broker, the default) or of containers (``--delivery-environment docker``);
  ``kafka_cluster.bootstrap_servers`` is what your own clients use;
- ``kafka_faults``: a fault controller on that cluster (kill, pause, partition a broker,
  proxy rules such as lost acknowledgements); whatever a test breaks is healed after it;
- ``delivery``: runs a scenario of the verifier (its load generators, faults, the Spark
  observer, the checks) on that cluster with your producer settings as a column, and
  judges it: ``delivery.run("ack-loss", producer_config="app.properties")``.

A result's ``verdict(column)`` equals ``"PASS"``, ``"FAIL"``, ``"UNKNOWN"`` or
``"SKIPPED"``; an assertion on it that fails lists the anomalies (kind, count, why it is
forbidden, sample records with partition, offsets, producer session and sequence)::

    def test_my_producer_is_exactly_once_under_ack_loss(delivery):
        result = delivery.run("ack-loss", producer_config="app.properties",
                              expect="idempotent")
        assert result.verdict("user:app") == "PASS"

``expect`` states the guarantee you need; by default a column is held to the one its
settings claim (``transactional.id`` -> transactional, idempotence -> idempotent, acks=all
with retries -> at-least-once, else at-most-once).

Options: ``--delivery-environment embedded|docker``, ``--delivery-base-port`` (default
9800: clients B+n, proxy B+300+n), ``--delivery-out`` (run folders; default a pytest
temporary folder), ``--delivery-seed``. The ``containers`` marker is registered for
tests that need a Docker engine.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DEFAULT_BASE_PORT = 9800
ENVIRONMENTS = ("embedded", "docker")


# ----- options -------------------------------------------------------------------------

def pytest_addoption(parser) -> None:
    group = parser.getgroup("delivery", "delivery-verifier: Kafka delivery guarantees")
    group.addoption("--delivery-environment", choices=ENVIRONMENTS, default=None,
                    help="where kafka_cluster runs: embedded (default) or docker")
    group.addoption("--delivery-base-port", type=int, default=None,
                    help=f"kafka_cluster's port plan base (default {DEFAULT_BASE_PORT})")
    group.addoption("--delivery-out", default=None,
                    help="folder for the run folders of delivery.run (default: pytest's "
                         "temporary folder)")
    group.addoption("--delivery-seed", type=int, default=1,
                    help="seed of the fault schedules")
    parser.addini("delivery_environment", "embedded or docker", default="embedded")
    parser.addini("delivery_base_port", "kafka_cluster's base port", default="")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "containers: needs a Docker engine (the docker "
                                       "environment of delivery-verifier)")


def _option(config, name: str, ini: str, default):
    value = config.getoption(name)
    if value is None:
        value = config.getini(ini) or default
    return value


# ----- the verdict a test asserts on ---------------------------------------------------

class Verdict(str):
    """A column's verdict: equal to ``"PASS"``, ``"FAIL"``, ... and carrying the column's
    judged anomalies, which a failed comparison lists (``pytest_assertrepr_compare``)."""

    column: str
    judged: dict
    run_dir: str

    def __new__(cls, value: str, column: str, judged: dict, run_dir: str) -> Verdict:
        obj = super().__new__(cls, value)
        obj.column, obj.judged, obj.run_dir = column, judged, run_dir
        return obj

    def __repr__(self) -> str:
        found = [f"{a['count']} {k}" for k, a in self.judged["anomalies"].items()
                 if a["count"] and k in self.judged["forbidden"]]
        why = f": {', '.join(found)} forbidden" if found else ""
        return f"'{str(self)}' ({self.column} as {self.judged['demanded']}{why})"

    def explain(self, sample: int = 3) -> list[str]:
        """The lines a failed assertion shows: the verdict and why first (pytest shows
        the first lines unless -vv), then each anomaly kind with a few of its records."""
        j = self.judged
        claim = (f"as its settings claim ({j['claimed']})" if j["demanded"] == j["claimed"]
                 else f"as demanded (its settings claim {j['claimed']})")
        present = [(k, a) for k, a in j["anomalies"].items() if a["count"]]
        forbidden = [f"{a['count']} {k}" for k, a in present if k in j["forbidden"]]
        head = f"column {self.column} judged {j['demanded']} {claim}: {str(self)}"
        if forbidden:
            head += f", forbidden: {', '.join(forbidden)}"
        lines = [head]
        for reason in j.get("reasons", []):
            lines.append(f"  unknown because: {reason}")
        for kind, a in sorted(present, key=lambda ka: ka[0] not in j["forbidden"]):
            mark = "FORBIDDEN" if kind in j["forbidden"] else a["expectation"]
            topics = sorted({s.get("topic") for s in a["sample"] if s.get("topic")})
            where = f" in {', '.join(topics)}" if topics else ""
            lines.append(f"  {kind}: {a['count']} ({mark}){where}, e.g.")
            for s in a["sample"][:sample]:
                lines.append("    " + _describe_sample(s))
        lines.append(f"  run folder: {self.run_dir} (verdict.json, report.html)")
        return lines


def _describe_sample(s: dict) -> str:
    offsets = s.get("offsets") or ([s["offset"]] if "offset" in s else [])
    iso = f" ({s['isolation']})" if s.get("isolation") else ""
    return (f"partition {s.get('partition', '?')} offsets {offsets}{iso}: producer "
            f"{s.get('pid')} session {s.get('ses')} seq {s.get('seq')}")


def pytest_assertrepr_compare(config, op: str, left, right):
    verdict = left if isinstance(left, Verdict) else right if isinstance(right, Verdict) \
        else None
    if verdict is None or op not in ("==", "!="):
        return None
    other = right if verdict is left else left
    return [f"{str(verdict)!r} {op} {other!r}", *verdict.explain()]


# ----- a run's result ------------------------------------------------------------------

@dataclass
class DeliveryResult:
    """The outcome of one ``delivery.run``: the run's verdict document and its folder."""

    doc: dict
    run_dir: Path
    #: the rendered side-by-side table, as `verifier chaos` prints it
    table: str
    #: column name -> the guarantee it is held to (``expect=`` or its settings' claim)
    demanded: dict[str, str] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return [c["name"] for c in self.doc["columns"]]

    def column(self, name: str) -> dict:
        """A column by its name (``user:app.properties``, ``idempotent``, ...); a user's
        column also by its file's stem (``user:app``)."""
        cols = self.doc["columns"]
        for c in cols:
            if c["name"] == name:
                return c
        stem = [c for c in cols if c["name"].startswith("user:")
                and c["name"].rsplit(".", 1)[0] == name]
        if len(stem) == 1:
            return stem[0]
        raise KeyError(f"no column {name!r} in this run; columns: {', '.join(self.columns)}")

    def verdict(self, name: str) -> Verdict:
        from verifier.judge.demand import judge_as

        col = self.column(name)
        demanded = self.demanded.get(col["name"], col["expect"])
        judged = judge_as(col, demanded, self.doc.get("sink", "exactly-once"))
        judged["reasons"] = col.get("reasons", [])
        return Verdict(judged["verdict"], col["name"], judged, str(self.run_dir))

    def anomalies(self, name: str) -> dict[str, int]:
        """Every anomaly kind present in the column, with its count."""
        col = self.column(name)
        return {k: a["count"] for k, a in col["anomalies"].items() if a["count"]}

    def counts(self, name: str) -> dict[str, int]:
        return dict(self.column(name)["counts"])


# ----- the verifier a test calls -------------------------------------------------------

class DeliveryVerifier:
    """``delivery``: runs scenarios on the session's cluster and judges them."""

    def __init__(self, env, out: Path, seed: int, spark, test_dir: Path | None) -> None:
        self.env = env
        self.out = Path(out)
        self.seed = seed
        self._spark = spark
        self.test_dir = test_dir

    def _config_path(self, producer_config) -> Path:
        path = Path(producer_config)
        if not path.is_absolute() and self.test_dir is not None \
                and (self.test_dir / path).exists():
            return self.test_dir / path  # next to the test file, as a user keeps it
        return path

    def run(self, scenario: str, producer_config: str | os.PathLike | None = None, *,
            expect: str | None = None, modes: tuple[str, ...] | list[str] | None = None,
            time_scale: float = 1.0, rate_scale: float = 1.0, seed: int | None = None,
            sink: str | None = None, client: str = "kafka-python") -> DeliveryResult:
        """Run ``scenario`` (a name from `verifier chaos --help` or a PATH.toml) on the
        session's cluster: the presets of ``modes`` (default: the scenario's, all four;
        ``()`` for none) and, with ``producer_config``, your Java-style producer
        properties as the column ``user:<file name>``, judged as ``expect`` (default: what
        the settings claim). ``time_scale``/``rate_scale`` shorten or thin the load as a
        profile does. Returns when the verdict is in (a minute or two)."""
        from dataclasses import replace

        from verifier import api
        from verifier.judge.expectations import PRESETS
        from verifier.orchestration.orchestrator import spark_env
        from verifier.orchestration.planning import RunOptions
        from verifier.orchestration.scenario import Profile, load_scenario, scaled
        from verifier.rundata.errors import UsageError

        if expect is not None and expect not in PRESETS:
            raise UsageError(f"expect={expect!r}: one of {list(PRESETS)}")
        sc = scaled(load_scenario(str(scenario)),
                    Profile("pytest", (), time_scale=time_scale, rate_scale=rate_scale))
        if modes is not None:
            sc = replace(sc, workload=replace(sc.workload, modes=tuple(modes)))
        user = None
        if producer_config is not None:
            # claimed on kafka-python's defaults whatever the client, as it always was
            user = api.read_user_producer(self._config_path(producer_config), client,
                                          claim_on="kafka-python")
        if not sc.workload.modes and user is None:
            raise UsageError("nothing to run: no modes and no producer_config")
        opts = RunOptions(out=self.out, seed=self.seed if seed is None else seed, sink=sink,
                          user_config=user.path if user else None,
                          user_mode=user.claimed if user else None,
                          user_settings=user.config.settings if user else {},
                          user_overrides=user.config.overrides if user else {},
                          user_notes=user.config.notes if user else [],
                          profile="pytest", extra_env=spark_env(), client=client)
        text = io.StringIO()
        doc = api.run_scenario(self.env, sc, opts, self._spark, out=text)
        print(text.getvalue())  # pytest shows it with a failing test
        demanded = {}
        if user is not None:
            demanded[f"user:{user.path.name}"] = expect or user.claimed
        return DeliveryResult(doc, Path(doc["run_dir"]), text.getvalue(), demanded)


class FaultController:
    """``kafka_faults``: break the session's cluster on purpose; healed after each test."""

    def __init__(self, env) -> None:
        from verifier.harness.faults.kinds import FaultEnv

        self.env = env
        self.fault_env: FaultEnv = env.fault_env({})
        self.cluster = self.fault_env.cluster
        self.proxy = self.fault_env.proxy

    @property
    def bootstrap_servers(self) -> str:
        return self.env.bootstrap_servers

    def leader_of(self, topic: str, partition: int = 0) -> int:
        """The node that leads ``topic``-``partition`` now."""
        from verifier.harness.faults.targets import resolve_broker

        node = resolve_broker({"leader": {"topic": topic, "partition": partition}},
                              self.bootstrap_servers, **self.env.client_config)
        assert node is not None
        return node

    def kill_broker(self, node: int) -> None:
        """SIGKILL (embedded) or ``docker kill`` (docker): a crash; :meth:`start_broker`
        brings it back on its data."""
        self.cluster.kill_node(node)

    def start_broker(self, node: int, wait: bool = True) -> None:
        self.cluster.start_node(node)
        if wait:
            self.cluster.wait_ready()

    def pause_broker(self, node: int) -> None:
        """SIGSTOP (embedded) or ``docker pause`` (docker): a hung broker."""
        self.cluster.pause_node(node)

    def resume_broker(self, node: int) -> None:
        self.cluster.resume_node(node)

    def partition(self, node: int) -> dict:
        """Cut ``node`` off from the other brokers (docker environment only: the embedded
        one needs its own network namespace, as `verifier chaos` makes)."""
        if self.fault_env.partition is None:
            pytest.skip("a network partition needs --delivery-environment docker here")
        return self.fault_env.partition.cut(node)

    def heal_partition(self, node: int) -> dict:
        return self.fault_env.partition.heal(node)

    def proxy_rule(self, kind: str, broker: int | None = None, **params) -> int:
        """A fault proxy rule in front of ``broker`` (None: every broker): ``ack-loss``
        (``probability``, ``action`` drop/close), ``latency`` (``ms``), ``blackhole``,
        ``reset``, ``hold``; see docs/faults.md. Returns its id for :meth:`remove_rule`."""
        from verifier.harness.faults.kinds.proxy import RULES

        rule = self.proxy.add_rule(kind=RULES.get(kind, kind), broker=broker, **params)
        return rule["id"]

    def remove_rule(self, rule_id: int) -> dict:
        return self.proxy.remove_rule(rule_id)

    def heal(self) -> dict:
        """Every fault undone: rules cleared, partitions healed, brokers resumed or
        started, and the cluster ready again."""
        from verifier.harness.faults.recovery import heal_everything

        detail = heal_everything(self.fault_env, set())
        self.cluster.wait_ready()
        return detail


# ----- fixtures ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def kafka_cluster(request, tmp_path_factory) -> Iterator[object]:
    """A running, proxied 3-node KRaft cluster for the whole session: embedded, or
    containers with ``--delivery-environment docker`` (a test marked ``containers`` is
    skipped with the reason when no Docker engine answers)."""
    from verifier.rundata import jvm

    config = request.config
    kind = _option(config, "--delivery-environment", "delivery_environment", "embedded")
    base_port = int(_option(config, "--delivery-base-port", "delivery_base_port",
                            DEFAULT_BASE_PORT))
    state = tmp_path_factory.mktemp("delivery-cluster")
    jvm.choose_java()
    if kind == "docker":
        from verifier.harness.containers.engine import configure_testcontainers, engine_problem
        from verifier.harness.containers.environment import DockerEnvironment

        configure_testcontainers()
        problem = engine_problem()
        if problem is not None:
            pytest.skip(f"docker environment: {problem}")
        env = DockerEnvironment(state, base_port=base_port)
    else:
        from verifier.harness.environment import LocalEnvironment

        env = LocalEnvironment(state / "cluster", base_port=base_port)
    with env:
        yield env


@pytest.fixture
def kafka_faults(kafka_cluster) -> Iterator[FaultController]:
    """Faults on the session's cluster; everything is healed when the test ends."""
    controller = FaultController(kafka_cluster)
    try:
        yield controller
    finally:
        controller.heal()


@pytest.fixture(scope="session")
def _delivery_spark(tmp_path_factory):
    """The verification's Spark session (the observer runs its own), started once."""
    from streaming.session import CHAOS_CONF, SPARK_CONF_ENV, spark_session

    os.environ.setdefault(SPARK_CONF_ENV, json.dumps(CHAOS_CONF))
    log = tmp_path_factory.mktemp("delivery-spark") / "verifier-spark.log"
    spark = spark_session(app_name="verifier-pytest", log_file=log)
    try:
        yield spark
    finally:
        spark.stop()


@pytest.fixture
def delivery(request, kafka_cluster, _delivery_spark, tmp_path_factory) -> DeliveryVerifier:
    """Runs the verifier's scenarios on ``kafka_cluster`` and judges them."""
    out = request.config.getoption("--delivery-out")
    out = Path(out) if out else tmp_path_factory.mktemp("delivery-runs")
    test_dir = Path(request.path).parent
    return DeliveryVerifier(kafka_cluster, out, request.config.getoption("--delivery-seed"),
                            _delivery_spark, test_dir)
