"""Producer presets per delivery mode, user properties, and the checked producer.

Settings are plain frozen data layered **defaults -> preset -> user overrides**. Keys are
kafka-python keyword arguments, plus two generator-side knobs (``buffer_memory``,
``record_size``: kafka-python 3.0.12 has no ``buffer.memory``, so the generator bounds the
bytes it has in flight itself, as Java's ``send()`` blocks on a full buffer).

Every mode-defining setting is explicit in every preset (``enable_idempotence``, ``acks``,
``retries``, ``max_in_flight_requests_per_connection``): kafka-python silently drops
idempotence when ``enable_idempotence`` is left to its default and another setting
conflicts (notes §3.1). Passing it explicitly turns that into an error, and
:func:`check_effective` verifies the built producer anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import kafka.errors as KE
from kafka import KafkaProducer

from producers.properties import java_name
from verifier.rundata.errors import UsageError
from verifier.rundata.plan import (  # noqa: F401 - secrets are the plan's, re-exported
    REDACTED,
    SECRET_KWARGS,
    redacted,
    security_of,
)
from verifier.rundata.vocab import MODES  # noqa: E402

#: settings the generator implements itself; never passed to KafkaProducer
#: (``commit_after_flush_ms``: the Java generator's only, verifier.orchestration.scenario)
GENERATOR_KEYS = frozenset({"buffer_memory", "record_size", "commit_after_flush_ms"})

MAX_INT = 2**31 - 1  # Java's Integer.MAX_VALUE: "retry until delivery.timeout.ms"

DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "batch_size": 16384,
    "linger_ms": 5,
    "buffer_memory": 32 * 1024 * 1024,
    "record_size": 200,
    "compression_type": None,
    "request_timeout_ms": 30000,
    # delivery.timeout.ms >= linger.ms + request.timeout.ms, else a batch could expire
    # before its first request has had a chance to time out (KIP-91); 120 s leaves room
    # for a few retries across a leader failover.
    "delivery_timeout_ms": 120000,
    "retry_backoff_ms": 100,
    # bounds send()'s metadata wait and init_transactions(); the generator also uses it to
    # bound commit/abort, which kafka-python leaves unbounded (notes §4, KAFKA-7763)
    "max_block_ms": 60000,
})

PRESETS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "at-most-once": MappingProxyType({
        "enable_idempotence": False, "acks": 1, "retries": 0,
        "max_in_flight_requests_per_connection": 5,
    }),
    "at-least-once": MappingProxyType({
        "enable_idempotence": False, "acks": -1, "retries": MAX_INT,
        "max_in_flight_requests_per_connection": 5,
    }),
    "idempotent": MappingProxyType({
        "enable_idempotence": True, "acks": -1, "retries": MAX_INT,
        "max_in_flight_requests_per_connection": 5,
    }),
    "transactional": MappingProxyType({
        "enable_idempotence": True, "acks": -1, "retries": MAX_INT,
        "max_in_flight_requests_per_connection": 5,
        # small, so a killed producer's open transaction does not hold read_committed
        # readers back for long if nobody re-inits its transactional id; must stay below
        # the broker's transaction.max.timeout.ms (900 s)
        "transaction_timeout_ms": 30000,
    }),
})  # fmt: skip


def layered(mode: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """defaults -> preset -> overrides, as one plain dict (not yet validated)."""
    if mode not in PRESETS:
        raise UsageError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    return {**DEFAULTS, **PRESETS[mode], **(overrides or {})}


def _conflict(settings: Mapping[str, Any], keys: list[str], why: str) -> str:
    shown = ", ".join(f"{java_name(k)}={_show(settings.get(k))}" for k in keys)
    return f"{shown}: {why}"


def _show(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "none"}[value]
    return "all" if value == -1 else str(value)


def _mode_conflicts(mode: str, s: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    idem, acks, retries = s.get("enable_idempotence"), s.get("acks"), s.get("retries")
    if mode in ("idempotent", "transactional") and not idem:
        out.append(_conflict(s, ["enable_idempotence"], f"mode {mode} needs idempotence"))
    if mode in ("at-most-once", "at-least-once") and idem:
        out.append(_conflict(s, ["enable_idempotence"],
                             f"mode {mode} runs without idempotence (use mode idempotent)"))
    if mode == "at-most-once" and retries != 0:
        out.append(_conflict(s, ["retries"], "at-most-once never retries (retries=0)"))
    if mode == "at-least-once" and retries == 0:
        out.append(_conflict(s, ["retries"], "at-least-once needs retries > 0"))
    if mode == "at-least-once" and acks == 0:
        out.append(_conflict(s, ["acks"], "at-least-once needs acknowledgements (1 or all)"))
    if s.get("transactional_id") and mode != "transactional":
        out.append(_conflict(s, ["transactional_id"], f"mode {mode} is not transactional"))
    return out


def _idempotence_conflicts(s: Mapping[str, Any]) -> list[str]:
    # the same three conflicts kafka-python resolves by silently dropping idempotence
    if not s.get("enable_idempotence"):
        return []
    out: list[str] = []
    if s.get("acks") != -1:
        out.append(_conflict(s, ["enable_idempotence", "acks"], "idempotence needs acks=all"))
    if s.get("retries") == 0:
        out.append(_conflict(s, ["enable_idempotence", "retries"],
                             "idempotence needs retries > 0"))
    if s.get("max_in_flight_requests_per_connection", 5) > 5:
        out.append(_conflict(s, ["enable_idempotence", "max_in_flight_requests_per_connection"],
                             "idempotence needs at most 5 requests in flight"))
    return out


def _timeout_conflicts(s: Mapping[str, Any]) -> list[str]:
    linger, req = s.get("linger_ms", 0), s.get("request_timeout_ms", 0)
    delivery = s.get("delivery_timeout_ms", 0)
    if delivery < linger + req:
        # kafka-python would raise too, but without naming the relation
        return [f"delivery.timeout.ms={delivery} is below linger.ms + request.timeout.ms = "
                f"{linger} + {req} = {linger + req}: a batch could expire before its first "
                "request has had a chance to time out"]
    return []


def conflicts(mode: str, s: Mapping[str, Any]) -> list[str]:
    """Every way the layered settings ``s`` contradict ``mode`` or each other."""
    out = _mode_conflicts(mode, s) + _idempotence_conflicts(s) + _timeout_conflicts(s)
    if s.get("record_size", 0) < 0 or s.get("buffer_memory", 1) <= 0:
        out.append(_conflict(s, ["record_size", "buffer_memory"], "must be positive"))
    return out


def resolve(mode: str, overrides: Mapping[str, Any] | None = None, *,
            transactional_id: str | None = None) -> Mapping[str, Any]:
    """The validated, frozen settings for ``mode``; :class:`UsageError` listing every
    conflict. ``transactional_id`` is the generator's default id (stable across restarts)
    when the user did not set one."""
    s = layered(mode, overrides)
    if mode == "transactional" and not s.get("transactional_id"):
        s["transactional_id"] = transactional_id
    found = conflicts(mode, s)
    if found:
        raise UsageError(f"conflicting producer settings for mode {mode}: " + "; ".join(found))
    return MappingProxyType(s)


def producer_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The kafka-python keyword arguments (generator-side knobs removed)."""
    return {k: v for k, v in settings.items() if k not in GENERATOR_KEYS}


@contextmanager
def quiet_kafka_logs() -> Iterator[None]:
    """kafka-python logs every refused connection at ERROR; where the caller reports the
    outcome once itself, silence it for the duration (unless debug logging is on)."""
    kafka_log = logging.getLogger("kafka")
    level = kafka_log.level
    if not kafka_log.isEnabledFor(logging.DEBUG):
        kafka_log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        kafka_log.setLevel(level)


def client_security(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The connection settings a consumer next to this producer needs (TLS, SASL)."""
    return security_of(settings)


def check_effective(settings: Mapping[str, Any], effective: Mapping[str, Any],
                    transactional: bool) -> None:
    """Compare the producer kafka-python actually built (its ``config`` dict) with what
    was asked; a silent downgrade or any other drift is a :class:`UsageError` naming the
    keys."""
    drift = []
    for key in ("enable_idempotence", "acks", "retries", "max_in_flight_requests_per_connection",
                "transactional_id"):
        want = -1 if settings.get(key) == "all" else settings.get(key)
        if key in settings and effective.get(key) != want:
            drift.append(f"{java_name(key)}: asked {_show(want)}, got {_show(effective.get(key))}")
    if transactional and not effective.get("transactional_id"):
        drift.append("transactional.id: not set on the producer")
    if drift:
        raise UsageError("the producer's effective settings differ from the requested ones "
                         "(kafka-python changed them, e.g. a silent idempotence downgrade): "
                         + "; ".join(drift))


def build_producer(settings: Mapping[str, Any], bootstrap_servers: str,
                   bootstrap_timeout_s: float = 30, **extra: Any) -> KafkaProducer:
    """A ``KafkaProducer`` with every setting passed explicitly, checked after build.

    kafka-python's own conflict errors (``KafkaConfigurationError``) become
    :class:`UsageError`; a cluster that cannot be reached stays a ``KafkaTimeoutError`` for
    the caller to report.
    """
    kwargs = producer_kwargs(settings)
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap_servers.split(","),
                                 bootstrap_timeout_ms=int(bootstrap_timeout_s * 1000),
                                 **kwargs, **extra)
    except (KE.KafkaConfigurationError, ValueError) as exc:
        raise UsageError(f"kafka-python rejected the producer settings: {exc}") from exc
    try:
        check_effective(settings, producer.config, bool(settings.get("transactional_id")))
    except UsageError:
        producer.close(timeout=0)
        raise
    return producer


def codec_problem(codec: str | None) -> str | None:
    """Why kafka-python cannot compress with ``codec`` here (its codec package is not
    installed), or None. kafka-python would raise a bare RuntimeError in every send."""
    import kafka.codec as codecs

    have = {"gzip": codecs.has_gzip, "snappy": codecs.has_snappy, "lz4": codecs.has_lz4,
            "zstd": codecs.has_zstd}
    if codec is None or codec not in have or have[codec]():
        return None
    return (f"compression.type={codec}: kafka-python cannot compress with {codec} here (its "
            f"package is missing): run `make setup`, or pip install 'kafka-python[{codec}]'")


def check_buildable(mode: str, overrides: Mapping[str, Any] | None = None, *,
                    transactional_id: str | None = None) -> Mapping[str, Any]:
    """The client-side part of :func:`build_producer`, with no cluster and in well under
    a second: the conflict table, kafka-python's own configuration checks and the
    effective-settings comparison. :class:`UsageError` for what a generator would refuse
    once started."""
    settings = resolve(mode, overrides, transactional_id=transactional_id)
    problem = codec_problem(settings.get("compression_type"))
    if problem:
        raise UsageError(problem)
    with quiet_kafka_logs():
        try:  # a known api_version: no bootstrap probe, nothing is connected
            producer = KafkaProducer(bootstrap_servers=["127.0.0.1:1"], api_version=(2, 8),
                                     **producer_kwargs(settings))
        except (KE.KafkaConfigurationError, ValueError, TypeError) as exc:
            raise UsageError(f"kafka-python rejected the producer settings: {exc}") from exc
        try:
            check_effective(settings, producer.config, bool(settings.get("transactional_id")))
        finally:
            producer.close(timeout=0)
    return settings
