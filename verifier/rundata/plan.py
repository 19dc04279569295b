"""The run's plan: one value, written once to ``RUN/config.json``, read by every child.

The orchestrator builds a :class:`RunPlan` (scenario, producers, workload, resolved
faults, environment facts including the clients' security settings) and writes it with
:meth:`RunPlan.write`; a generator (``python -m producers --plan RUN/config.json --pid P``)
and the observer (``python -m streaming.observer --plan RUN/config.json``) read it back
with :func:`read_plan` instead of receiving the same facts again as flags
(docs/formats.md §5).

Secrets never reach the run folder: the document holds ``***`` in their place, and the
real values travel to the children in the environment variable
:data:`SECRETS_ENV` (a JSON object of kafka-python setting names to values), which
:meth:`RunPlan.client_security` merges back in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from verifier.rundata.errors import UsageError
from verifier.rundata.formats import RunFormatError, check_header, read_json, write_json

#: kafka-python settings whose values are secrets: redacted whenever printed or written
SECRET_KWARGS = frozenset({"sasl_plain_password", "ssl_password", "sasl_oauth_token_provider"})
REDACTED = "***"

#: the environment variable that carries the secrets to child processes
SECRETS_ENV = "VERIFIER_CLIENT_SECRETS"

#: prefixes of the kafka-python settings every client needs to reach the cluster
SECURITY_PREFIXES = ("security_", "sasl_", "ssl_")


def security_of(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The connection settings (TLS, SASL) among producer or client settings."""
    return {k: v for k, v in settings.items() if k.startswith(SECURITY_PREFIXES)}


def redacted(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy safe to print and to write into the run: secrets replaced by ``***``."""
    return {k: (REDACTED if k in SECRET_KWARGS and v is not None else v)
            for k, v in sorted(settings.items())}


def secrets_of(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Only the secret values of ``settings`` (what :data:`SECRETS_ENV` carries)."""
    return {k: v for k, v in settings.items() if k in SECRET_KWARGS and v is not None}


def secrets_env(settings: Mapping[str, Any]) -> dict[str, str]:
    """The environment entries that hand the secrets of ``settings`` to a child."""
    found = secrets_of(settings)
    return {SECRETS_ENV: orjson.dumps(found).decode()} if found else {}


def unredact(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None
             ) -> dict[str, Any]:
    """``settings`` with every ``***`` replaced by its value from :data:`SECRETS_ENV`;
    a redacted secret without a value there is a :class:`UsageError` naming the key."""
    environ = os.environ if environ is None else environ
    try:
        given = orjson.loads(environ.get(SECRETS_ENV) or "{}")
    except orjson.JSONDecodeError:
        raise UsageError(f"${SECRETS_ENV} is not a JSON object") from None
    if not isinstance(given, dict):
        raise UsageError(f"${SECRETS_ENV} is not a JSON object")
    out = dict(settings)
    missing = []
    for k, v in settings.items():
        if v == REDACTED and k in SECRET_KWARGS:
            if k in given:
                out[k] = given[k]
            else:
                missing.append(k)
    if missing:
        raise UsageError(f"the plan's {', '.join(sorted(missing))} is redacted and "
                         f"${SECRETS_ENV} does not carry it")
    return out


@dataclass(frozen=True)
class PlannedProducer:
    """One logical producer of the run."""

    pid: str
    mode: str  # the report column: a preset or ``user:<label>``
    expect: str  # the preset whose expectations (and generator loop) apply
    topic: str
    #: the user's producer settings (kafka-python names) on top of the preset, secrets
    #: redacted when read from a plan; empty for a preset
    overrides: Mapping[str, Any] = field(default_factory=dict)
    config_file: str | None = None  # where the overrides came from (for the reader)
    #: the generator's client library (``kafka-python``, ``java``) and its version
    client: str = "kafka-python"
    client_version: str | None = None
    #: what ``--clients`` named (``java:3.9.1``: that version side by side), if not the
    #: bare ``client`` (its pinned version)
    client_spec: str | None = None
    #: the copier (mode ``copier``): the topic it reads, another producer's (formats §2.1)
    input_topic: str | None = None

    @property
    def spec(self) -> str:
        """The client as ``--clients`` names it: what starts its generator."""
        return self.client_spec or self.client

    @property
    def process_name(self) -> str:
        return f"producer:{self.mode}"

    def to_json(self) -> dict:
        doc = {"mode": self.mode, "expect": self.expect, "topic": self.topic,
               "process": self.process_name, "client": self.client}
        if self.client_version is not None:
            doc["client_version"] = self.client_version
        if self.client_spec not in (None, self.client):
            doc["client_spec"] = self.client_spec
        if self.overrides:
            doc["overrides"] = redacted(self.overrides)
        if self.config_file is not None:
            doc["config_file"] = self.config_file
        if self.input_topic is not None:
            doc["input_topic"] = self.input_topic
        return doc


@dataclass(frozen=True)
class RunPlan:
    """Everything one scenario run is, as plain data; ``config.json`` is its redacted form."""

    run: str
    scenario: str
    seed: int
    sink: str
    bootstrap_servers: str
    producers: Mapping[str, PlannedProducer]
    #: the generators' pacing: ``rate``, ``record_size``, ``txn_size``, ``abort_fraction``
    workload: Mapping[str, Any] = field(default_factory=dict)
    #: kafka-python connection settings every client needs (TLS, SASL)
    security: Mapping[str, Any] = field(default_factory=dict)
    spark_master: str | None = None
    environment: str = "local"
    profile: str = "custom"
    #: anything else the run records (scenario spec, fault schedule, notes)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def topics(self) -> list[str]:
        return [p.topic for p in self.producers.values()]

    def producer(self, pid: str) -> PlannedProducer:
        if pid not in self.producers:
            raise UsageError(f"producer {pid!r} is not in the plan (known: "
                             f"{', '.join(self.producers)})")
        return self.producers[pid]

    def client_security(self, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The security settings with their secrets (from :data:`SECRETS_ENV`)."""
        return unredact(self.security, environ)

    def producer_overrides(self, pid: str, environ: Mapping[str, str] | None = None
                           ) -> dict[str, Any]:
        """The settings a generator layers on its preset: the clients' security
        settings, then the producer's own overrides, secrets filled in."""
        return unredact({**self.security, **self.producer(pid).overrides}, environ)

    def all_settings(self) -> dict[str, Any]:
        """Every setting with a secret the children may need (for :func:`secrets_env`)."""
        merged = dict(self.security)
        for p in self.producers.values():
            merged.update(p.overrides)
        return merged

    def child_env(self) -> dict[str, str]:
        """The environment entries every child of this run needs (the secrets)."""
        return secrets_env(self.all_settings())

    @property
    def kafka_version(self) -> str | None:
        """The broker release the run ran on (``external`` for a user's cluster); None
        for a run recorded before versions were."""
        return self.extra.get("kafka_version")

    @property
    def scenario_spec(self) -> dict:
        """The scenario as run (its faults, ``connections`` thresholds); {} when the run
        was recorded before it was written."""
        return dict(self.extra.get("scenario_spec") or {})

    @property
    def pipelines(self) -> dict[str, dict]:
        """The pipelines under test: name -> entry (spec, guarantee, isolation,
        output_topic, hold_ms, ...: :mod:`verifier.rundata.pipelines`)."""
        return dict(self.extra.get("pipelines") or {})

    @property
    def apps(self) -> dict[str, dict]:
        """The consumer applications under test (issue 47): name -> entry (command,
        guarantee, instances, group_id, output_topic, input_topics, ...:
        :mod:`verifier.rundata.apps`)."""
        return dict(self.extra.get("apps") or {})

    @property
    def user_input(self) -> dict[str, dict]:
        """The producers that write a pipeline file's declared topic (issue 46): pid ->
        ``{"spec", "topic", "partitions"}`` (verifier.orchestration.user_input)."""
        return dict(self.extra.get("user_input") or {})

    def clients(self) -> list[str]:
        """The generators' clients with their versions (``java 4.1.1``), sorted; a run
        recorded before clients were named ran kafka-python."""
        return sorted({f"{p.client} {p.client_version}" if p.client_version else p.client
                       for p in self.producers.values()})

    def client_ids(self) -> dict[str, str]:
        """client id -> pid, for the producers whose own settings name their client id
        (a user's ``client.id``); the others are the generator's default."""
        out = {}
        for pid, p in self.producers.items():
            cid = p.overrides.get("client_id") or p.overrides.get("client.id")
            if isinstance(cid, str) and cid:
                out[cid] = pid
        return out

    def transactional_ids(self) -> dict[str, str]:
        """transactional id -> pid, for the transactional producers (the copier too): the
        one their own settings name, else the generators' default ``<run>.<pid>``
        (producers.config.resolve)."""
        out = {}
        for pid, p in self.producers.items():
            if p.expect != "transactional":
                continue
            tid = p.overrides.get("transactional_id") or p.overrides.get("transactional.id")
            out[tid if isinstance(tid, str) and tid else f"{self.run}.{pid}"] = pid
        return out

    def to_json(self) -> dict:
        return {
            **self.extra,
            "run": self.run, "scenario": self.scenario, "profile": self.profile,
            "seed": self.seed, "sink": self.sink, "environment": self.environment,
            "bootstrap_servers": self.bootstrap_servers,
            "security": redacted(self.security), "spark_master": self.spark_master,
            "workload": dict(self.workload),
            "producers": {pid: p.to_json() for pid, p in self.producers.items()},
        }  # fmt: skip

    def write(self, path: Path) -> Path:
        """``config.json``: the plan with its secrets redacted."""
        return write_json(path, "run-config", self.to_json())


_KNOWN = {"format", "version", "run", "scenario", "profile", "seed", "sink", "environment",
          "bootstrap_servers", "security", "spark_master", "workload", "producers"}


def read_plan(path: Path) -> RunPlan:
    """A plan written by :meth:`RunPlan.write` (secrets still redacted): the one parser
    of ``config.json``; :class:`RunFormatError` when it is missing or not a plan."""
    path = Path(path)
    return plan_from_json(read_plan_json(path), path)


def read_plan_json(path: Path) -> dict:
    """``config.json``'s document as written (its header checked): for the self-test,
    which copies a run folder, edits the copy's plan (a mutation adds a producer) and
    writes it back; every other reader wants :func:`read_plan`."""
    return read_json(Path(path), "run-config")


def plan_of(run_dir: Path | str) -> RunPlan | None:
    """The plan of a run folder, or None when it has none or it does not parse: for the
    readers that can do without it (a report's extra line, a fault's label)."""
    from verifier.rundata.layout import layout

    try:
        return read_plan(layout(run_dir).config)
    except (RunFormatError, OSError):
        return None


def plan_from_json(doc: Mapping[str, Any], path: Path | str = "config.json") -> RunPlan:
    """A plan from its JSON document (``config.json``'s content, header included);
    ``path`` names it in errors. A recorded run may lack ``bootstrap_servers`` (the
    judge does not need it; every child is handed a plan that has it)."""
    path = Path(path)
    check_header(path, doc, "run-config")
    try:
        producers = {
            pid: PlannedProducer(pid=pid, mode=str(p["mode"]), expect=str(p.get("expect",
                                 p["mode"])), topic=str(p["topic"]),
                                 overrides=dict(p.get("overrides") or {}),
                                 config_file=p.get("config_file"),
                                 client=str(p.get("client") or "kafka-python"),
                                 client_version=p.get("client_version"),
                                 client_spec=p.get("client_spec"),
                                 input_topic=p.get("input_topic"))
            for pid, p in doc["producers"].items()
        }
        return RunPlan(
            run=str(doc["run"]), scenario=str(doc.get("scenario", "unnamed")),
            seed=int(doc.get("seed") or 0), sink=str(doc.get("sink", "exactly-once")),
            bootstrap_servers=str(doc.get("bootstrap_servers") or ""), producers=producers,
            workload=dict(doc.get("workload") or {}),
            security=dict(doc.get("security") or {}), spark_master=doc.get("spark_master"),
            environment=str(doc.get("environment", "local")),
            profile=str(doc.get("profile", "custom")),
            extra={k: v for k, v in doc.items() if k not in _KNOWN},
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RunFormatError(path, f"not a run plan: missing or bad field {exc}") from None
