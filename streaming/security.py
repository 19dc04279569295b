"""The clients' security settings (kafka-python names) as Spark Kafka source options.

The Spark connector hands every ``kafka.``-prefixed option to the Java consumer, so the
same SASL/SSL settings the generators use reach the observer:

    security_protocol                  kafka.security.protocol
    sasl_mechanism                     kafka.sasl.mechanism
    sasl_plain_username/_password      kafka.sasl.jaas.config (Plain or Scram login module)
    sasl_kerberos_service_name         kafka.sasl.kerberos.service.name
    ssl_cafile                         kafka.ssl.truststore.location (type PEM)
    ssl_certfile (key inside)          kafka.ssl.keystore.location (type PEM)
    ssl_password                       kafka.ssl.key.password
    ssl_check_hostname = false         kafka.ssl.endpoint.identification.algorithm = ""

The result holds secrets: pass it to Spark, never print or write it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifier.rundata.errors import UsageError

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def spark_kafka_options(security: Mapping[str, Any]) -> dict[str, str]:
    """``kafka.*`` source options for kafka-python security settings; a setting the
    Java client cannot be given this way is a :class:`UsageError` naming it."""
    s = dict(security)
    out: dict[str, str] = {}
    unsupported = []
    if s.get("security_protocol"):
        out["kafka.security.protocol"] = str(s.pop("security_protocol"))
    mechanism = s.pop("sasl_mechanism", None)
    if mechanism:
        out["kafka.sasl.mechanism"] = str(mechanism)
    user, password = s.pop("sasl_plain_username", None), s.pop("sasl_plain_password", None)
    if user is not None or password is not None:
        module = _LOGIN_MODULES.get(str(mechanism or "PLAIN"))
        if module is None or user is None or password is None:
            unsupported.append(f"sasl username/password with mechanism {mechanism}")
        else:
            out["kafka.sasl.jaas.config"] = (f'{module} required username="{_jaas_quote(user)}"'
                                             f' password="{_jaas_quote(password)}";')
    if s.get("sasl_kerberos_service_name"):
        out["kafka.sasl.kerberos.service.name"] = str(s.pop("sasl_kerberos_service_name"))
    if s.get("ssl_cafile"):
        out["kafka.ssl.truststore.type"] = "PEM"
        out["kafka.ssl.truststore.location"] = str(s.pop("ssl_cafile"))
    certfile, keyfile = s.pop("ssl_certfile", None), s.pop("ssl_keyfile", None)
    if certfile:
        if keyfile and keyfile != certfile:
            unsupported.append("ssl.key.location apart from ssl.keystore.location (the Java "
                               "client reads the key and its certificate from one PEM file)")
        out["kafka.ssl.keystore.type"] = "PEM"
        out["kafka.ssl.keystore.location"] = str(certfile)
    elif keyfile:
        unsupported.append("ssl.key.location without ssl.keystore.location")
    if s.get("ssl_password"):
        out["kafka.ssl.key.password"] = str(s.pop("ssl_password"))
    if s.get("ssl_check_hostname") is False:
        out["kafka.ssl.endpoint.identification.algorithm"] = ""
    s.pop("ssl_check_hostname", None)
    # left: e.g. ssl_crlfile, ssl_ciphers (OpenSSL names; Java wants IANA names)
    unsupported += sorted(k for k, v in s.items() if v is not None)
    if unsupported:
        raise UsageError("the Spark observer cannot use these security settings: "
                         + "; ".join(unsupported))
    return out
