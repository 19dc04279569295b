"""The clients' own configuration checks, without a broker (``verifier advise``).

Each check builds the client's producer from a configuration and reports whether the
client accepts it, its own message when it refuses, and the settings it would run with
where the client exposes them: kafka-python (``KafkaProducer`` with a known api_version,
so nothing is connected), librdkafka (``confluent_kafka.Producer(conf)`` without
``bootstrap.servers``) and Kafka's Java producer (the Java generator's
``--validate-config``, one JVM of about a second).

Each client is given the file as written, in its own names: a key it does not read is
named with the client's own word for it (Java ignores it and says so; kafka-python and
librdkafka refuse it), never translated into another client's name (issue 49).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from producers.java_producer_keys import JAVA_PRODUCER_KEYS
from producers.properties import (
    NO_DELIVERY_EFFECT,
    PROPERTY_MAP,
    REPLACED,
    java_name,
    map_properties,
)
from verifier.rundata.errors import UsageError

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


def kafka_python_names() -> frozenset[str]:
    """kafka-python's own setting names (``KafkaProducer.DEFAULT_CONFIG``)."""
    from kafka import KafkaProducer

    return frozenset(KafkaProducer.DEFAULT_CONFIG)


def kafka_python(pairs: list[tuple[str, str]], version: str) -> ClientCheck:
    """kafka-python's own checks: ``KafkaProducer(**settings)`` with the file's Java keys
    mapped as the tool's generator maps them, kafka-python's own names as they are, and
    every other key as kafka-python would be given it (``broker.list`` as
    ``broker_list``), so that kafka-python names what it does not know itself."""
    import kafka.errors as KE
    from kafka import KafkaProducer

    from producers.config import producer_kwargs, quiet_kafka_logs

    t0 = time.monotonic()
    own = kafka_python_names()
    mapped = [(k, v) for k, v in pairs if k in PROPERTY_MAP or k in REPLACED
              or k in NO_DELIVERY_EFFECT]
    mapped += [(java_name(k), v) for k, v in pairs if k in own and java_name(k) in PROPERTY_MAP]
    try:
        settings = map_properties(mapped, "config")
    except UsageError as exc:
        return ClientCheck("kafka-python", version, False, str(exc),
                           seconds=time.monotonic() - t0)
    settings.pop("sasl_jaas_config", None)
    unknown = {k.replace(".", "_"): v for k, v in pairs if (k, v) not in mapped
               and not (k in own and java_name(k) in PROPERTY_MAP)
               and k not in ("bootstrap_servers", "api_version")}  # the check's own
    with quiet_kafka_logs():
        try:
            producer = KafkaProducer(bootstrap_servers=["127.0.0.1:1"], api_version=(2, 8),
                                     **producer_kwargs(settings), **unknown)
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
    handle is created and refuses with its own message (``No such configuration
    property``); without bootstrap.servers nothing is connected. The Java keys the tool's
    librdkafka generator maps or replaces are given as it gives them."""
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


# ---- which client reads which names (issue 49) --------------------------------------------

#: librdkafka's own names that the Java producer does not read (checked against
#: confluent-kafka 2.16.1 / librdkafka 2.16.0: each is a property there, none is in
#: ProducerConfig.configNames() of kafka-clients 4.1.1)
LIBRDKAFKA_NAMES = frozenset("""
request.required.acks message.send.max.retries max.in.flight message.timeout.ms
queue.buffering.max.ms queue.buffering.max.messages queue.buffering.max.kbytes
batch.num.messages message.max.bytes message.copy.max.bytes metadata.broker.list
topic.metadata.refresh.interval.ms socket.timeout.ms debug statistics.interval.ms
sasl.mechanisms ssl.ca.location ssl.certificate.location compression.codec
offset.store.method api.version.request broker.version.fallback delivery.report.only.error
enable.gapless.guarantee sticky.partitioning.linger.ms partitioner
""".split())
#: the Java producer's names librdkafka does not read (librdkafka 2.16.0 refuses each)
JAVA_ONLY_NAMES = frozenset({
    "buffer.memory", "max.block.ms", "key.serializer", "value.serializer",
    "interceptor.classes", "partitioner.class", "send.buffer.bytes",
})
#: the old Scala producer's names (Kafka 0.7 and 0.8, removed in Kafka 2.0), read by no
#: client of today, each with what took its place
SCALA_PRODUCER = {
    "broker.list": "bootstrap.servers", "zk.connect": "bootstrap.servers",
    "producer.type": "none: sends are asynchronous, a blocking send waits on the future",
    "serializer.class": "value.serializer", "key.serializer.class": "key.serializer",
    "queue.time": "linger.ms", "queue.size": "buffer.memory",
    "max.message.size": "max.request.size", "compressed.topics": "none",
    "queue.enqueueTimeout.ms": "max.block.ms", "queue.enqueue.timeout.ms": "max.block.ms",
    "callback.handler": "a send callback", "event.handler": "none",
    "zk.sessiontimeout.ms": "none", "zk.connectiontimeout.ms": "none",
}
#: each client's word for a key it does not read, and whether it refuses the file for it
CLIENT_WORD = {
    "java": ("ignored: the Java producer logs \"These configurations '[{keys}]' were "
             "supplied but are not used yet.\"", False),
    "kafka-python": ("refused: kafka-python raises ValueError \"Unrecognized configs\"", True),
    "librdkafka": ("refused: librdkafka says \"No such configuration property\"", True),
}


def unknown_keys(keys: list[str], client: str) -> list[str]:
    """The keys of a producer file that ``client`` does not read, in file order."""
    if client == "java":
        known = JAVA_PRODUCER_KEYS | {"record.size"}  # the generator's own extension
    elif client == "kafka-python":  # the tool's Java names for it, and its own names
        known = set(PROPERTY_MAP) | set(REPLACED) | NO_DELIVERY_EFFECT | kafka_python_names()
    elif client == "librdkafka":  # what librdkafka itself refuses is its check's to say
        return [k for k in keys if k in SCALA_PRODUCER]
    else:
        return []
    return [k for k in dict.fromkeys(keys) if k not in known]


def unknown_line(keys: list[str], client: str) -> str:
    """One line naming ``keys`` with ``client``'s own word, and what each may be."""
    word, _ = CLIENT_WORD[client]
    what = []
    for k in keys:
        if k in SCALA_PRODUCER:
            what.append(f"{k} (the old Scala producer's, Kafka 0.7/0.8; today: "
                        f"{SCALA_PRODUCER[k]})")
        elif k in LIBRDKAFKA_NAMES:
            what.append(f"{k} (librdkafka's name)")
        elif k in kafka_python_names():
            what.append(f"{k} (kafka-python's name)")
        else:
            what.append(k)
    return (f"{client} does not read {', '.join(what)}: "
            + word.format(keys=", ".join(keys)))


def refuses_unknown(client: str) -> bool:
    """Does ``client`` refuse a file with a key it does not read (else: ignores it)?"""
    return CLIENT_WORD.get(client, ("", False))[1]


def suggested_client(keys: list[str]) -> tuple[str, list[str]] | None:
    """The client whose own names the keys are (with those keys), when they say one:
    librdkafka's, kafka-python's, the Java producer's alone, or the old Scala producer."""
    votes = {
        "librdkafka": [k for k in keys if k in LIBRDKAFKA_NAMES],
        "kafka-python": [k for k in keys if k in kafka_python_names() and "_" in k],
        "java": [k for k in keys if k in JAVA_ONLY_NAMES],
        "the old Scala producer (Kafka 0.7/0.8)": [k for k in keys if k in SCALA_PRODUCER],
    }
    best = max(votes, key=lambda c: len(votes[c]))
    return (best, votes[best]) if votes[best] else None
