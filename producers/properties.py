"""Java-style producer properties (a file or ``--set key=value``) mapped onto the
generator's settings (kafka-python keyword arguments plus generator-side knobs).

Unknown keys are an error naming them: a user verifying their own configuration must not
have a setting silently ignored. Secret values never leave this module unredacted in any
message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

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

_KWARG_TO_JAVA = {name: key for key, (name, _) in reversed(list(PROPERTY_MAP.items())) if name}
_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def java_name(kwarg: str) -> str:
    """The Java property name for a setting (for messages), or the setting itself."""
    return _KWARG_TO_JAVA.get(kwarg, kwarg)


def show_value(key: str, value: str) -> str:
    """A property value as it may be printed: secrets redacted."""
    return "***" if key in SECRET_PROPERTIES else value


def parse_properties_text(text: str, source: str) -> list[tuple[str, str]]:
    """``key=value`` / ``key: value`` lines; ``#`` and ``!`` comments; a trailing
    backslash continues a line (java.util.Properties, without unicode escapes)."""
    pairs: list[tuple[str, str]] = []
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
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


def map_properties(pairs: Iterable[tuple[str, str]], source: str) -> dict[str, Any]:
    """Settings from Java properties; unknown keys and bad values are a
    :class:`UsageError` naming every offending key (never a secret value)."""
    pairs = list(pairs)
    unknown = sorted({k for k, _ in pairs if k not in PROPERTY_MAP})
    if unknown:
        raise UsageError(f"{source}: unknown producer properties: {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(PROPERTY_MAP))})")
    out: dict[str, Any] = {}
    bad = []
    for key, value in pairs:
        name, parse = PROPERTY_MAP[key]
        try:
            parsed = parse(value)
        except ValueError as exc:
            bad.append(f"{key}={show_value(key, value)} ({exc})")
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


def load_properties(path: Path | None, sets: Iterable[str] = ()) -> dict[str, Any]:
    """Settings from a properties file, then ``--set key=value`` items on top."""
    out: dict[str, Any] = {}
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise UsageError(f"cannot read producer config {path}: {exc}") from exc
        out.update(map_properties(parse_properties_text(text, str(path)), str(path)))
    pairs = []
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item.split('=')[0]!r}: expected key=value")
        pairs.append((key.strip(), value.strip()))
    out.update(map_properties(pairs, "--set"))
    return out
