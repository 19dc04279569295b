"""Scenarios and profiles as plain data.

A scenario is composed, not subclassed: a workload (modes, partitions, sizes, rates), a
fault schedule (declarative fault specs, see verifier.harness.faults) and options, read
from one TOML file in ``verifier/orchestration/scenarios/``. A profile
(``quick``, ``full``) picks scenarios and
scales their workload; the result is one plain frozen value per scenario run.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from verifier.rundata.errors import UsageError

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
from verifier.rundata.vocab import COPIER, MODES, SINKS  # noqa: E402


@dataclass(frozen=True)
class Workload:
    modes: tuple[str, ...] = MODES
    partitions: int = 3
    record_size: int = 100
    rate: float = 200.0  # records/s per generator
    duration_s: float = 30.0  # load phase
    txn_size: int = 10
    abort_fraction: float = 0.2


#: how a ``[broker]`` table takes effect
BROKER_APPLY = ("start", "dynamic")
#: settings the local cluster's port plan and quorum own: a scenario may not replace them
OWNED_BROKER_KEYS = frozenset({
    "process.roles", "node.id", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "listeners", "advertised.listeners", "listener.security.protocol.map",
    "inter.broker.listener.name", "controller.listener.names", "log.dirs", "log.dir",
})
_CONFIG_NAME = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*")


@dataclass(frozen=True)
class BrokerSettings:
    """A scenario's ``[broker]`` table: Kafka broker settings and how they apply.

    ``start``: in every node's ``server.properties`` (the local cluster's nodes are
    restarted one by one when the running ones have other settings); ``dynamic``: set on
    the cluster-wide default with IncrementalAlterConfigs ``at`` seconds into the load
    (a ``broker-config`` event of the nemesis history) and restored when faults heal."""

    settings: dict[str, str]
    apply: str = "start"
    at: float = 0.0

    def to_json(self) -> dict:
        return {"apply": self.apply, "at": self.at, "settings": dict(self.settings)}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    workload: Workload
    faults: tuple[dict, ...] = ()
    sink: str = "exactly-once"
    #: deadline for the drain phase, seconds (transaction timeout + abort scan + slack)
    drain_timeout_s: float = 120.0
    source: str = ""
    #: the connection checks' thresholds (verifier.judge.connections.thresholds)
    connections: dict = field(default_factory=dict)
    #: kafka-python producer settings every preset generator gets on top of its mode's
    clients: dict = field(default_factory=dict)
    #: the ``[broker]`` table: broker settings the scenario needs (None: the defaults)
    broker: BrokerSettings | None = None
    #: the ``[pipelines]`` table: how the pipelines under test run here
    #: (``fail_on_data_loss``: a tuple of values, each pipeline once per value)
    pipelines: dict = field(default_factory=dict)
    #: ``[options] proxy_replication``: broker-to-broker traffic passes the fault proxy
    #: too (the local cluster's brokers advertise it on their replication listener), so
    #: holds can match the coordinator's WriteTxnMarkers; off: replication goes direct
    proxy_replication: bool = False

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "workload": {**self.workload.__dict__, "modes": list(self.workload.modes)},
            "faults": [dict(f) for f in self.faults],
            "sink": self.sink,
            "drain_timeout_s": self.drain_timeout_s,
            "connections": dict(self.connections),
            "clients": dict(self.clients),
            **({"broker": self.broker.to_json()} if self.broker else {}),
            **({"pipelines": {k: list(v) for k, v in self.pipelines.items()}}
               if self.pipelines else {}),
            **({"proxy_replication": True} if self.proxy_replication else {}),
        }

    def broker_faults(self) -> tuple[dict, ...]:
        """A dynamic ``[broker]`` table as the nemesis runs it: one ``broker-config``
        fault from ``at`` to the end of the load (healing restores the old values)."""
        b = self.broker
        if b is None or b.apply != "dynamic":
            return ()
        return ({"kind": "broker-config", "target": {"all": True}, "start": b.at,
                 "duration": round(self.workload.duration_s - b.at, 3),
                 "params": {"settings": dict(b.settings)}},)


@dataclass(frozen=True)
class Profile:
    name: str
    scenarios: tuple[str, ...]
    #: multiplies every scenario's load duration and fault times
    time_scale: float = 1.0
    rate_scale: float = 1.0
    extra: dict = field(default_factory=dict)
    #: broker versions the profile runs its scenarios on, one after another (the
    #: ``versions`` profile; ``--kafka-versions`` replaces them); empty: KAFKA_VERSION
    kafka_versions: tuple[str, ...] = ()
    #: clients side by side (``--clients`` replaces them); empty: ``--client``
    clients: tuple[str, ...] = ()
    #: run each scenario this long, its faults repeating (the ``soak`` profile;
    #: ``--duration`` replaces it, see :func:`stretched`); None: the scenario's own
    duration_s: float | None = None
    #: how often the faults repeat when stretched (None: every scenario length)
    period_s: float | None = None
    #: run the known bugs' combinations and their grid (the ``known-bugs`` profile,
    #: verifier.orchestration.known_bugs): versions and clients come from the bugs
    known_bugs: bool = False


def _check_keys(where: str, data: dict, allowed: set[str]) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise UsageError(f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})")


def parse_workload(where: str, data: dict) -> Workload:
    _check_keys(where, data, set(Workload.__dataclass_fields__))
    try:
        w = Workload(**{**data, "modes": tuple(data.get("modes", MODES))})
    except TypeError as exc:
        raise UsageError(f"{where}: {exc}") from exc
    bad = [m for m in w.modes if m not in (*MODES, COPIER)]
    if bad:
        raise UsageError(f"{where}: unknown modes {bad} (known: {[*MODES, COPIER]})")
    if COPIER in w.modes and w.modes.index(COPIER) == 0:
        raise UsageError(f"{where}: the copier copies the topic of the mode listed before "
                         "it: name one first (modes = [\"idempotent\", \"copier\"])")
    if w.partitions < 1 or w.duration_s <= 0 or w.rate <= 0 or w.txn_size < 1:
        raise UsageError(f"{where}: partitions, duration_s, rate, txn_size must be positive")
    if not 0 <= w.abort_fraction < 1:
        raise UsageError(f"{where}: abort_fraction must be in [0, 1)")
    return w


def parse_scenario(text: str, name: str, source: str = "<string>") -> Scenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{source}: not valid TOML: {exc}") from exc
    _check_keys(source, data, {"description", "workload", "faults", "options",
                               "connections", "clients", "broker", "pipelines"})
    options = data.get("options", {})
    # no "nodes": every scenario of a matrix shares one environment (3 local nodes, or the
    # user's cluster), so a per-scenario node count could not be honoured
    _check_keys(f"{source} [options]", options, {"sink", "drain_timeout_s",
                                                 "proxy_replication"})
    if not isinstance(options.get("proxy_replication", False), bool):
        raise UsageError(f"{source} [options]: proxy_replication is true or false")
    sink = options.get("sink", "exactly-once")
    if sink not in SINKS:
        raise UsageError(f"{source}: sink must be one of {list(SINKS)}, not {sink!r}")
    workload = parse_workload(f"{source} [workload]", data.get("workload", {}))
    broker = (parse_broker(f"{source} [broker]", data["broker"], workload.duration_s)
              if "broker" in data else None)
    faults = data.get("faults", [])
    if not isinstance(faults, list) or not all(isinstance(f, dict) for f in faults):
        raise UsageError(f"{source}: [[faults]] must be a list of tables")
    return Scenario(
        name=name,
        description=str(data.get("description", "")),
        workload=workload,
        faults=tuple(faults),
        sink=sink,
        drain_timeout_s=float(options.get("drain_timeout_s", 120.0)),
        source=source,
        connections=_connection_checks(source, data.get("connections", {})),
        clients=_clients(source, data.get("clients", {})),
        broker=broker,
        pipelines=parse_pipelines(f"{source} [pipelines]", data.get("pipelines", {})),
        proxy_replication=options.get("proxy_replication", False),
    )


def parse_pipelines(where: str, data) -> dict:
    """``[pipelines]``: ``fail_on_data_loss`` = true, false or a list of both (the Kafka
    source's failOnDataLoss; each pipeline under test runs once per value, side by side)."""
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a table")
    _check_keys(where, data, {"fail_on_data_loss"})
    if "fail_on_data_loss" not in data:
        return {}
    raw = data["fail_on_data_loss"]
    values = raw if isinstance(raw, list) else [raw]
    if not values or not all(isinstance(v, bool) for v in values) or \
            len(set(values)) != len(values):
        raise UsageError(f"{where}: fail_on_data_loss must be true, false or [true, false], "
                         f"not {raw!r}")
    return {"fail_on_data_loss": tuple(values)}


def _flatten(prefix: str, value, out: dict) -> None:
    """TOML reads ``transaction.partition.verification.enable = false`` as nested
    tables; the Kafka name is the dotted path."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def _setting_text(where: str, key: str, value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise UsageError(f"{where}: {key} must be a string, number or boolean, not {value!r}")


def parse_broker(where: str, data, duration_s: float) -> BrokerSettings:
    """``[broker]``: ``apply`` (start | dynamic), ``at`` (dynamic only: seconds into the
    load), and ``settings`` (Kafka broker settings, dotted names written plainly)."""
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a table")
    _check_keys(where, data, {"apply", "at", "settings"})
    apply = data.get("apply", "start")
    if apply not in BROKER_APPLY:
        raise UsageError(f"{where}: apply must be one of {list(BROKER_APPLY)}, not {apply!r}")
    raw = data.get("settings")
    if not isinstance(raw, dict) or not raw:
        raise UsageError(f"{where}: settings must be a non-empty table of broker settings, "
                         "e.g. settings = { \"transaction.partition.verification.enable\" "
                         "= false }")
    flat: dict = {}
    _flatten("", raw, flat)
    settings = {}
    for key, value in flat.items():
        if not _CONFIG_NAME.fullmatch(key):
            raise UsageError(f"{where}: {key!r} is not a Kafka setting name")
        if key in OWNED_BROKER_KEYS:
            raise UsageError(f"{where}: {key} belongs to the local cluster's port plan and "
                             "quorum and cannot be set by a scenario")
        settings[key] = _setting_text(where, key, value)
    at = data.get("at", 0)
    if "at" in data and apply != "dynamic":
        raise UsageError(f"{where}: at applies to apply = \"dynamic\" only (start-time "
                         "settings hold from the first broker start)")
    if isinstance(at, bool) or not isinstance(at, int | float) or not 0 <= at < duration_s:
        raise UsageError(f"{where}: at must be a number of seconds in [0, {duration_s:g}) "
                         f"(the load's duration), not {at!r}")
    return BrokerSettings(settings=settings, apply=apply, at=float(at))


#: producer settings a scenario may give every generator, never what defines a mode:
#: connections, request and delivery timeouts, how records are batched (linger, batch
#: size, compression) and the Java generator's ``commit_after_flush_ms`` (it commits its
#: input after flush(), as Kafka Streams at-least-once; kafka-python's does not)
CLIENT_KEYS = frozenset({"connections_max_idle_ms", "reconnect_backoff_ms",
                         "reconnect_backoff_max_ms", "metadata_max_age_ms",
                         "request_timeout_ms", "delivery_timeout_ms", "linger_ms",
                         "batch_size", "compression_type", "commit_after_flush_ms"})
#: the [clients] keys whose value is a name, not a number
_CLIENT_NAMES = frozenset({"compression_type"})


def _connection_checks(source: str, data: dict) -> dict:
    from verifier.judge.connections import thresholds

    try:
        thresholds(data)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{source} [connections]: {exc}") from exc
    return dict(data)


def _clients(source: str, data: dict) -> dict:
    _check_keys(f"{source} [clients]", data, set(CLIENT_KEYS))
    bad = [k for k, v in data.items() if k not in _CLIENT_NAMES
           and (not isinstance(v, int) or isinstance(v, bool))]
    if bad:
        raise UsageError(f"{source} [clients]: {bad} must be integers (milliseconds, bytes)")
    named = [k for k in _CLIENT_NAMES & set(data) if not isinstance(data[k], str)]
    if named:
        raise UsageError(f"{source} [clients]: {named} must be a name (\"lz4\")")
    return dict(data)


def available() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml") if not p.stem.startswith("_"))


def load_scenario(name: str) -> Scenario:
    """A scenario by name (``scenarios/NAME.toml``) or a user's own file (``PATH.toml``)."""
    if name.endswith(".toml"):
        path = Path(name)
        try:
            text = path.read_text()
        except OSError as exc:
            raise UsageError(f"cannot read scenario file {name}: {exc.strerror}") from None
        return parse_scenario(text, path.stem, str(path))
    path = SCENARIO_DIR / f"{name}.toml"
    if not path.exists():
        raise UsageError(f"unknown scenario {name!r}; available: {', '.join(available())}")
    return parse_scenario(path.read_text(), name, str(path))


def load_profiles() -> dict[str, Profile]:
    path = SCENARIO_DIR / "_profiles.toml"
    data = tomllib.loads(path.read_text())
    profiles = {}
    for name, p in data.items():
        profiles[name] = Profile(
            name=name,
            scenarios=tuple(p.get("scenarios") or available()),
            time_scale=float(p.get("time_scale", 1.0)),
            rate_scale=float(p.get("rate_scale", 1.0)),
            kafka_versions=tuple(p.get("kafka_versions", ())),
            clients=tuple(p.get("clients", ())),
            duration_s=parse_duration(p["duration"]) if "duration" in p else None,
            period_s=parse_duration(p["period"]) if "period" in p else None,
            known_bugs=bool(p.get("known_bugs", False)),
        )
    return profiles


def parse_duration(text) -> float:
    """``30m``, ``90s``, ``1h`` or a number of seconds, as seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    raw = str(text).strip().lower()
    try:
        value = float(raw[:-1]) * units[raw[-1]] if raw[-1:] in units else float(raw)
    except (ValueError, IndexError):
        raise UsageError(f"duration {text!r}: expected e.g. 30m, 90s, 1h or seconds") from None
    if value <= 0:
        raise UsageError(f"duration {text!r}: must be positive")
    return value


def stretched(scenario: Scenario, seconds: float, period: float | None = None) -> Scenario:
    """The scenario run for ``seconds`` (a soak): its load as long, its fault list repeated
    once per ``period`` (at least the scenario's own duration; each copy shifted by the
    period, each drawing its own times and rule seeds from the run's seed), as many whole
    periods as fit."""
    period = max(period or 0.0, scenario.workload.duration_s)
    copies = max(1, int(seconds // period))
    faults = tuple(_shift_fault(f, k * period) for k in range(copies) for f in scenario.faults)
    return replace(scenario, workload=replace(scenario.workload, duration_s=float(seconds)),
                   faults=faults)


def _shift_fault(fault: dict, by: float) -> dict:
    out = dict(fault)
    if "start" in out:
        s = out["start"]
        out["start"] = ([round(float(v) + by, 3) for v in s] if isinstance(s, list)
                        else round(float(s) + by, 3))
    return out


def _scale_time(value, k: float):
    if isinstance(value, list):  # a [low, high] range the seed picks from
        return [round(float(v) * k, 3) for v in value]
    return round(float(value) * k, 3)


def _scale_fault(fault: dict, k: float) -> dict:
    out = dict(fault)
    for key in ("start", "duration"):
        if key in out:
            out[key] = _scale_time(out[key], k)
    return out


def scaled(scenario: Scenario, profile: Profile) -> Scenario:
    """The scenario as the profile runs it: durations, fault times and rates scaled."""
    w = scenario.workload
    workload = replace(w, duration_s=round(w.duration_s * profile.time_scale, 3),
                       rate=w.rate * profile.rate_scale)
    faults = tuple(_scale_fault(f, profile.time_scale) for f in scenario.faults)
    broker = scenario.broker
    if broker is not None and broker.at:
        broker = replace(broker, at=round(broker.at * profile.time_scale, 3))
    return replace(scenario, workload=workload, faults=faults, broker=broker)
