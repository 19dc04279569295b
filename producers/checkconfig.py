"""The clients' own configuration checks, without a broker (``verifier advise``).

Each check builds the client's producer from a configuration and reports whether the
client accepts it, its own message when it refuses, and the settings it would run with
where the client exposes them: kafka-python (``KafkaProducer`` with a known api_version,
so nothing is connected), librdkafka (``confluent_kafka.Producer(conf)`` without
``bootstrap.servers``) and Kafka's Java producer (the Java generator's
``--validate-config``, one JVM of about a second).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from producers.properties import NO_DELIVERY_EFFECT, PROPERTY_MAP, REPLACED, map_properties

#: the settings a check compares with the advice's effective configuration
COMPARED = ("enable.idempotence", "acks", "retries", "max.in.flight.requests.per.connection")


@dataclass
class ClientCheck:
    client: str
    version: str
    ok: bool | None  # None: the check could not run
    error: str | None = None
    effective: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"client": self.client, "version": self.version, "ok": self.ok,
                "error": self.error, "effective": self.effective,
                "seconds": round(self.seconds, 3)}


def kafka_python(pairs: list[tuple[str, str]], version: str) -> ClientCheck:
    """kafka-python's own checks: its settings from the Java keys (an unknown key is the
    project's :class:`UsageError`), then ``KafkaProducer(**settings)``."""
    import kafka.errors as KE
    from kafka import KafkaProducer

    from producers.config import producer_kwargs, quiet_kafka_logs

    t0 = time.monotonic()
    settings = map_properties([(k, v) for k, v in pairs if k in PROPERTY_MAP
                               or k in REPLACED or k in NO_DELIVERY_EFFECT], "config")
    settings.pop("sasl_jaas_config", None)
    with quiet_kafka_logs():
        try:
            producer = KafkaProducer(bootstrap_servers=["127.0.0.1:1"], api_version=(2, 8),
                                     **producer_kwargs(settings))
        except (KE.KafkaConfigurationError, ValueError, TypeError, AssertionError) as exc:
            return ClientCheck("kafka-python", version, False, f"{type(exc).__name__}: {exc}",
                               seconds=time.monotonic() - t0)
        c = producer.config
        producer.close(timeout=0)
    retries = c["retries"]
    eff = {"enable.idempotence": bool(c["enable_idempotence"]),
           "acks": {-1: "all", 0: "0", 1: "1"}.get(c["acks"], str(c["acks"])),
           "retries": 2**31 - 1 if retries == float("inf") else int(retries),
           "max.in.flight.requests.per.connection": c["max_in_flight_requests_per_connection"]}
    return ClientCheck("kafka-python", version, True, effective=eff,
                       seconds=time.monotonic() - t0)


#: Java producer keys librdkafka does not know, as the librdkafka generator maps them
_RD_JAVA_ONLY = {"buffer.memory", "max.block.ms", "record.size", "key.serializer",
                 "value.serializer", "bootstrap.servers"}


def librdkafka(pairs: list[tuple[str, str]], version: str) -> ClientCheck:
    """``confluent_kafka.Producer(conf)``: librdkafka checks its configuration when the
    handle is created and refuses with its own message; without bootstrap.servers
    nothing is connected."""
    from confluent_kafka import KafkaException, Producer

    t0 = time.monotonic()
    conf: dict[str, Any] = {"log_level": 0}
    for key, value in pairs:
        if key == "buffer.memory":
            conf["queue.buffering.max.kbytes"] = max(1, int(value) // 1024)
        elif key not in _RD_JAVA_ONLY and key not in NO_DELIVERY_EFFECT:
            conf[key] = value
    try:
        Producer(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        err = exc.args[0] if exc.args else exc
        text = err.str() if hasattr(err, "str") else str(err)
        return ClientCheck("librdkafka", version, False, text, seconds=time.monotonic() - t0)
    return ClientCheck("librdkafka", version, True, seconds=time.monotonic() - t0)


def java(pairs: list[tuple[str, str]], version: str, timeout: float = 60) -> ClientCheck:
    """The Java producer's own validation through the Java generator (``--validate-config``);
    ``ok`` None when the generator for ``version`` is not built here."""
    from producers.clients import JAVA_MAIN
    from verifier.rundata import jvm

    t0 = time.monotonic()
    jars = jvm.java_generator_jars()
    if jars.version != version or not jvm.java_generator_built(jars):
        return ClientCheck("java", version, None,
                           f"the Java generator for kafka-clients {version} is not built here "
                           f"(KAFKA_CLIENTS_VERSION={version} make setup)")
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
        f.write("".join(f"{k}={v}\n" for k, v in pairs))
    try:
        proc = subprocess.run(
            [jvm.java_executable(), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", jars.classpath(),
             JAVA_MAIN, "--validate-config", f.name],
            capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ClientCheck("java", version, None, f"the Java check could not run: {exc}",
                           seconds=time.monotonic() - t0)
    finally:
        os.unlink(f.name)
    try:
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return ClientCheck("java", version, None, "the Java check said nothing readable: "
                           + (proc.stderr.strip()[-300:] or f"exit {proc.returncode}"),
                           seconds=time.monotonic() - t0)
    eff = doc.get("effective") or {}
    shown = {}
    for key in COMPARED:
        if key in eff:
            v = eff[key]
            shown[key] = (v == "true" if key == "enable.idempotence" else
                          ("all" if v == "-1" else v) if key == "acks" else int(v))
    return ClientCheck("java", doc.get("version", version), bool(doc.get("ok")),
                       doc.get("error"), shown, time.monotonic() - t0)
