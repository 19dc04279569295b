"""Java-style producer properties (a file or ``--set key=value``) mapped onto the
generator's settings (kafka-python keyword arguments plus generator-side knobs).

Unknown keys are an error naming them, with the nearest known key: a user verifying their
own configuration must not have a setting silently ignored. A real Java application's
file still runs: on ``--client java`` every kafka-clients producer key runs verbatim
(:func:`read_user_config`); on the Python clients the Java keys that do not change what is
delivered (``bootstrap.servers``, the serializers, metrics, socket buffers, ...) are
accepted and named in the run's notes. Secret values never leave this module unredacted in
any message.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from producers.java_producer_keys import JAVA_PRODUCER_KEYS
from producers.keystores import pem_stores
from verifier.rundata.errors import UsageError

#: Java property names whose values are secrets
SECRET_PROPERTIES = frozenset({
    "sasl.jaas.config", "sasl.password", "sasl.plain.password", "ssl.key.password",
    "ssl.keystore.password",
})


def _bool(v: str) -> bool:
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise ValueError("expected true or false")


def _acks(v: str) -> int:
    if v.lower() in ("all", "-1"):
        return -1
    if v in ("0", "1"):
        return int(v)
    raise ValueError("expected 0, 1, all or -1")


def _compression(v: str) -> str | None:
    v = v.lower()
    if v == "none":
        return None
    if v in ("gzip", "snappy", "lz4", "zstd"):
        return v
    raise ValueError("expected none, gzip, snappy, lz4 or zstd")


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(v: str) -> str:
        if v.upper() not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return v.upper()
    return parse


def _pem_only(v: str) -> str:
    if v.upper() != "PEM":
        raise ValueError("kafka-python reads PEM files only; convert JKS/PKCS12 stores to PEM")
    return v


def _endpoint_identification(v: str) -> bool:
    if v.lower() not in ("", "https"):
        raise ValueError('expected "https" or empty')
    return v.lower() == "https"


#: Java property -> (setting name, parser). ``None`` as the name: checked, not passed on.
PROPERTY_MAP: dict[str, tuple[str | None, Callable[[str], Any]]] = {
    "acks": ("acks", _acks),
    "enable.idempotence": ("enable_idempotence", _bool),
    "retries": ("retries", int),
    "max.in.flight.requests.per.connection": ("max_in_flight_requests_per_connection", int),
    "batch.size": ("batch_size", int),
    "linger.ms": ("linger_ms", int),
    "buffer.memory": ("buffer_memory", int),
    "delivery.timeout.ms": ("delivery_timeout_ms", int),
    "request.timeout.ms": ("request_timeout_ms", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "max.block.ms": ("max_block_ms", int),
    "max.request.size": ("max_request_size", int),
    "transactional.id": ("transactional_id", str),
    "transaction.timeout.ms": ("transaction_timeout_ms", int),
    "compression.type": ("compression_type", _compression),
    "client.id": ("client_id", str),
    "record.size": ("record_size", int),  # generator extension: record value size in bytes
    "security.protocol": ("security_protocol",
                          _choice("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    "sasl.mechanism": ("sasl_mechanism",
                       _choice("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")),
    "sasl.jaas.config": ("sasl_jaas_config", str),  # split into username/password below
    "sasl.username": ("sasl_plain_username", str),
    "sasl.plain.username": ("sasl_plain_username", str),
    "sasl.password": ("sasl_plain_password", str),
    "sasl.plain.password": ("sasl_plain_password", str),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", str),
    "ssl.truststore.location": ("ssl_cafile", str),
    "ssl.truststore.type": (None, _pem_only),
    "ssl.keystore.location": ("ssl_certfile", str),
    "ssl.keystore.type": (None, _pem_only),
    "ssl.key.location": ("ssl_keyfile", str),
    "ssl.key.password": ("ssl_password", str),
    "ssl.keystore.password": ("ssl_password", str),
    "ssl.crl.location": ("ssl_crlfile", str),
    "ssl.cipher.suites": ("ssl_ciphers", str),
    "ssl.endpoint.identification.algorithm": ("ssl_check_hostname", _endpoint_identification),
}

#: what the run puts in place of the user's value, on every client
REPLACED = {
    "bootstrap.servers": "replaced by the cluster's",
    "key.serializer": "replaced by the generator's (ByteArraySerializer: it writes bytes)",
    "value.serializer": "replaced by the generator's (ByteArraySerializer: it writes bytes)",
}

#: Java producer keys the Python clients accept without applying them: they do not change
#: what is delivered, or what the verdict judges
NO_DELIVERY_EFFECT = frozenset({
    "client.dns.lookup", "connections.max.idle.ms", "enable.metrics.push",
    "metadata.max.age.ms", "metadata.max.idle.ms", "metadata.recovery.rebootstrap.trigger.ms",
    "metadata.recovery.strategy", "metric.reporters", "metrics.num.samples",
    "metrics.recording.level", "metrics.sample.window.ms", "receive.buffer.bytes",
    "send.buffer.bytes", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
    "retry.backoff.max.ms", "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms", "compression.gzip.level",
    "compression.lz4.level", "compression.zstd.level", "auto.include.jmx.reporter",
    # the generator chooses each record's partition itself (its value names it)
    "partitioner.class", "partitioner.ignore.keys", "partitioner.adaptive.partitioning.enable",
    "partitioner.availability.timeout.ms",
})

_KWARG_TO_JAVA = {name: key for key, (name, _) in reversed(list(PROPERTY_MAP.items())) if name}
_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def java_name(kwarg: str) -> str:
    """The Java property name for a setting (for messages), or the setting itself."""
    return _KWARG_TO_JAVA.get(kwarg, kwarg)


def show_value(key: str, value: str) -> str:
    """A property value as it may be printed: secrets redacted."""
    return "***" if key in SECRET_PROPERTIES else value


#: a comment after a value (``acks=all   # durable``): java.util.Properties has none, so
#: the value is everything after the ``=``, comment included (issue 49)
_INLINE_COMMENT = re.compile(r"\s[#!]")
_SECTION = re.compile(r"^\[[^\]=]*\]$")


def inline_comment(key: str, value: str) -> str | None:
    """Why ``value`` reads wrong when it holds what looks like an inline comment, else
    None: Java properties have comments on lines of their own only."""
    if not _INLINE_COMMENT.search(value):
        return None
    return (f"{key}: Java properties have no inline comments, so its value is "
            f"{show_value(key, value)!r}, comment included; put the comment on a line of "
            "its own")


def parse_properties_text(text: str, source: str,
                          sections: list[str] | None = None) -> list[tuple[str, str]]:
    """``key=value`` / ``key: value`` lines; ``#`` and ``!`` comments; a trailing
    backslash continues a line (java.util.Properties, without unicode escapes). An INI
    section header (``[global]``, as in the config files of librdkafka tools) is skipped
    and collected into ``sections`` when given, else a :class:`UsageError` saying so."""
    pairs: list[tuple[str, str]] = []
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if not logical and _SECTION.match(line):
            if sections is None:
                raise UsageError(f"{source}: {line} is an INI section header (the config "
                                 "files of librdkafka tools have them); a properties file "
                                 "has none: remove the header lines")
            sections.append(line)
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", logical)
        if not m:
            raise UsageError(f"{source}: cannot parse line {logical.split('=')[0]!r}")
        pairs.append((m.group(1), m.group(2).strip()))
        logical = ""
    return pairs


def _nearest(key: str, known: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    return found[0] if found else None


def _unknown(keys: Iterable[str], known: Iterable[str], source: str) -> UsageError:
    """One message naming every unknown key, each with the nearest known key."""
    known = set(known)
    keys = sorted(set(keys))
    hints = [f"{k}: did you mean {near}?" for k in keys
             if (near := _nearest(k, known)) is not None]
    hint = f" ({'; '.join(hints)})" if hints else f" (known: {', '.join(sorted(known))})"
    return UsageError(f"{source}: unknown producer properties: {', '.join(keys)}{hint}")


def map_properties(pairs: Iterable[tuple[str, str]], source: str,
                   notes: list[str] | None = None, client: str = "kafka-python"
                   ) -> dict[str, Any]:
    """Settings from Java properties for a Python client; unknown keys and bad values are
    a :class:`UsageError` naming every offending key (never a secret value). Java keys
    that do not change delivery are dropped, each with a line in ``notes``."""
    pairs = list(pairs)
    java_only = sorted({k for k, _ in pairs if k not in PROPERTY_MAP and k not in REPLACED
                        and k not in NO_DELIVERY_EFFECT and k in JAVA_PRODUCER_KEYS})
    unknown = {k for k, _ in pairs if k not in PROPERTY_MAP and k not in REPLACED
               and k not in NO_DELIVERY_EFFECT and k not in JAVA_PRODUCER_KEYS}
    if unknown:
        raise _unknown(unknown, set(PROPERTY_MAP) | JAVA_PRODUCER_KEYS, source)
    if java_only:
        raise UsageError(f"{source}: {', '.join(java_only)}: Java producer settings "
                         f"{client} has no equivalent for (they run on --client java)")
    out: dict[str, Any] = {}
    bad = []
    for key, value in pairs:
        if key in REPLACED or key in NO_DELIVERY_EFFECT:
            if notes is not None:
                why = REPLACED.get(key) or (f"not applied: {client} has no equivalent and it "
                                            "does not change what is delivered")
                notes.append(f"{key}: {why}")
            continue
        name, parse = PROPERTY_MAP[key]
        try:
            parsed = parse(value)
        except ValueError as exc:
            why = inline_comment(key, value)
            bad.append(f"{key}={show_value(key, value)} ({exc}"
                       + (f"; {why.split(': ', 1)[1]})" if why else ")"))
            continue
        if name == "sasl_jaas_config":
            out.update(_jaas(parsed, source))
        elif name is not None:
            out[name] = parsed
    if bad:
        raise UsageError(f"{source}: bad values: {'; '.join(bad)}")
    return out


def _jaas(config: str, source: str) -> dict[str, str]:
    """username/password from a PlainLoginModule or ScramLoginModule jaas line."""
    if "PlainLoginModule" not in config and "ScramLoginModule" not in config:
        raise UsageError(f"{source}: sasl.jaas.config: only PlainLoginModule and "
                         "ScramLoginModule map onto kafka-python")
    fields = dict(_JAAS.findall(config))
    if "username" not in fields or "password" not in fields:
        raise UsageError(f"{source}: sasl.jaas.config needs username=\"...\" and password=\"...\"")
    return {"sasl_plain_username": fields["username"], "sasl_plain_password": fields["password"]}


def _read(path: Path) -> list[tuple[str, str]]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read producer config {path}: {exc}") from exc
    return parse_properties_text(text, str(path))


def load_properties(path: Path | None, sets: Iterable[str] = (),
                    notes: list[str] | None = None) -> dict[str, Any]:
    """Settings from a properties file, then ``--set key=value`` items on top."""
    out: dict[str, Any] = {}
    if path is not None:
        out.update(map_properties(_read(path), str(path), notes))
    pairs = []
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item.split('=')[0]!r}: expected key=value")
        pairs.append((key.strip(), value.strip()))
    out.update(map_properties(pairs, "--set"))
    return out


#: the user's properties whose values are mapped for the checks of a Java column (mode,
#: conflicts, the cluster connection); Java reads everything else itself
_CHECKED_ON_JAVA = frozenset({
    "acks", "enable.idempotence", "retries", "max.in.flight.requests.per.connection",
    "linger.ms", "delivery.timeout.ms", "request.timeout.ms", "transactional.id",
    "transaction.timeout.ms", "compression.type", "record.size", "batch.size",
    "buffer.memory",
})


#: kafka-clients secrets the run cannot carry to the Java generator (refused, not leaked)
_JAVA_SECRETS = frozenset({
    "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
})


@dataclass
class UserConfig:
    """A user's producer properties as one client runs them."""

    #: kafka-python names: what the mode is derived from and the pre-start checks read
    settings: dict[str, Any]
    #: what the plan carries for the user's column (``java``: Java names, verbatim)
    overrides: dict[str, Any]
    #: every key accepted but replaced or not applied, one line each (the run's notes)
    notes: list[str] = field(default_factory=list)


def read_user_config(path: Path, client: str = "kafka-python") -> UserConfig:
    """``--producer-config FILE`` for ``client``: on ``java`` the file runs verbatim (every
    kafka-clients producer key; ``bootstrap.servers`` and the serializers replaced, each
    noted); on the Python clients Java keys are mapped (:func:`map_properties`). Typos are
    a :class:`UsageError` with the nearest known key. JKS and PKCS12 stores are read as
    PEM files the run writes (producers.keystores)."""
    pairs = pem_stores(_read(path), str(path), java=client == "java")
    notes: list[str] = []
    if client != "java":
        settings = map_properties(pairs, str(path), notes, client)
        return UserConfig(settings, dict(settings), notes)
    known = JAVA_PRODUCER_KEYS | set(PROPERTY_MAP)
    typos = [k for k, _ in pairs if k not in known and _nearest(k, known) is not None]
    if typos:
        raise _unknown(typos, known, str(path))
    overrides: dict[str, Any] = {}
    secrets = [(k, v) for k, v in pairs if k in SECRET_PROPERTIES or k in _JAVA_SECRETS]
    if secrets:  # they reach the generator as the plan's redacted kafka-python settings
        try:
            overrides.update(map_properties(secrets, str(path)))
        except UsageError:
            raise UsageError(f"{path}: {', '.join(k for k, _ in secrets)}: the Java generator "
                             "takes secrets as sasl.jaas.config (Plain or Scram login module), "
                             "sasl.password or ssl.key.password only") from None
        pairs = [(k, v) for k, v in pairs if (k, v) not in secrets]
    for key, value in pairs:
        if key in REPLACED:
            notes.append(f"{key}: {REPLACED[key]}")
        elif key not in known:
            notes.append(f"{key}: not a kafka-clients producer setting; passed on as is "
                         "(a plugin may read it)")
            overrides[key] = value
        else:
            overrides[key] = value
    checked = [(k, v) for k, v in pairs if k in _CHECKED_ON_JAVA]
    settings = map_properties(checked, str(path))
    for key, value in pairs:  # the cluster connection, where kafka-python can read it too
        name = PROPERTY_MAP.get(key, (None, None))[0]
        if name and name.startswith(("security_", "sasl_", "ssl_")):
            try:
                settings.update(map_properties([(key, value)], str(path)))
            except UsageError:
                pass  # other login modules: the Java producer reads them
    # the secrets, mapped above, reach the tool's own clients too (a PEM key's password)
    settings.update({k: v for k, v in overrides.items() if k.startswith(("sasl_", "ssl_"))})
    return UserConfig(settings, overrides, notes)
