"""librdkafka's side of the generator contract: the presets mapped onto librdkafka
properties (:func:`librdkafka_config`) and its errors mapped to ok / fail / info
(:data:`TABLE`, documented in docs/librdkafka-generator.md), as :mod:`producers.outcomes`
is kafka-python's. Pure: importable without a broker (confluent-kafka's error objects are
read by their ``code()``/``name()`` and flags)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifier.rundata.errors import UsageError

CLIENT = "librdkafka"

#: kafka-python setting -> librdkafka property (None: generator-side, not passed on)
PROPERTIES: Mapping[str, str | None] = {
    "enable_idempotence": "enable.idempotence", "acks": "acks", "retries": "retries",
    "max_in_flight_requests_per_connection": "max.in.flight.requests.per.connection",
    "batch_size": "batch.size", "linger_ms": "linger.ms",
    "buffer_memory": "queue.buffering.max.kbytes", "compression_type": "compression.type",
    "request_timeout_ms": "request.timeout.ms", "delivery_timeout_ms": "delivery.timeout.ms",
    "retry_backoff_ms": "retry.backoff.ms", "transactional_id": "transactional.id",
    "transaction_timeout_ms": "transaction.timeout.ms", "client_id": "client.id",
    "max_request_size": "message.max.bytes",
    # librdkafka >= 1.9; its default 0 never closes (the idle-connections scenario sets it)
    "connections_max_idle_ms": "connections.max.idle.ms",
    "security_protocol": "security.protocol", "sasl_mechanism": "sasl.mechanism",
    "sasl_plain_username": "sasl.username", "sasl_plain_password": "sasl.password",
    "ssl_cafile": "ssl.ca.location", "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location", "ssl_password": "ssl.key.password",
    "ssl_crlfile": "ssl.crl.location", "ssl_ciphers": "ssl.cipher.suites",
    "max_block_ms": None, "record_size": None, "ssl_check_hostname": None,
}  # fmt: skip

SECRET_PROPERTIES = frozenset({"sasl.password", "ssl.key.password"})


def librdkafka_config(settings: Mapping[str, Any], bootstrap_servers: str,
                      client_id: str) -> dict[str, Any]:
    """The librdkafka properties for the generator's settings; a setting librdkafka has
    no equivalent for is a :class:`UsageError` naming it."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "client.id": client_id}
    unknown = []
    for key, value in settings.items():
        if key not in PROPERTIES:
            unknown.append(key)
            continue
        prop = PROPERTIES[key]
        if prop is None or value is None and key != "compression_type":
            continue
        if key == "acks":
            value = "all" if value == -1 else value
        elif key == "compression_type":
            value = value or "none"
        elif key == "buffer_memory":
            value = max(1, int(value) // 1024)
        conf[prop] = value
    if unknown:
        raise UsageError(f"librdkafka has no equivalent for {', '.join(sorted(unknown))}")
    txn_timeout = conf.get("transaction.timeout.ms")
    if txn_timeout is not None and conf.get("delivery.timeout.ms", 300000) > txn_timeout:
        # librdkafka refuses message.timeout.ms > transaction.timeout.ms (a record must
        # time out before its transaction does); Java and kafka-python allow it
        conf["delivery.timeout.ms"] = txn_timeout
    return conf


def redacted_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ("***" if k in SECRET_PROPERTIES else v) for k, v in sorted(conf.items())}


# --- the exception table ------------------------------------------------------------------

OK, FAIL, INFO = "ok", "fail", "info"

#: (operations, error code name or "*", predicate or None, outcome, why); first match wins.
#: Codes are librdkafka's (``KafkaError.<NAME>``; a leading ``_`` is a local error).
TABLE: tuple[tuple[tuple[str, ...], str, str | None, str, str], ...] = (
    (("enqueue",), "*", None, FAIL, "produce() raised (queue full past max.block.ms, unknown "
     "partition, producer in an error state): the record never entered the queue"),
    (("begin",), "*", None, FAIL, "begin_transaction() is local: no request was sent"),
    (("send",), "DUPLICATE_SEQUENCE_NUMBER", None, OK, "the broker has it already"),
    (("send",), "_PURGE_QUEUE", None, FAIL, "purged from the queue: never sent"),
    (("send",), "MSG_SIZE_TOO_LARGE", None, FAIL, "rejected"),
    (("send",), "_MSG_SIZE_TOO_LARGE", None, FAIL, "refused locally: never sent"),
    (("send",), "INVALID_MSG_SIZE", None, FAIL, "rejected"),
    (("send",), "RECORD_LIST_TOO_LARGE", None, FAIL, "rejected"),
    (("send",), "TOPIC_AUTHORIZATION_FAILED", None, FAIL, "rejected"),
    (("send",), "CLUSTER_AUTHORIZATION_FAILED", None, FAIL, "rejected"),
    (("send",), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", None, FAIL, "rejected"),
    (("send",), "INVALID_REQUIRED_ACKS", None, FAIL, "rejected"),
    (("send",), "POLICY_VIOLATION", None, FAIL, "rejected"),
    (("send",), "UNSUPPORTED_VERSION", None, FAIL, "rejected"),
    (("send",), "UNSUPPORTED_FOR_MESSAGE_FORMAT", None, FAIL, "rejected"),
    (("send",), "UNSUPPORTED_COMPRESSION_TYPE", None, FAIL, "rejected"),
    (("send",), "INVALID_RECORD", None, FAIL, "rejected"),
    (("send",), "PRODUCER_FENCED", None, FAIL, "fenced: the old epoch is rejected"),
    (("send",), "INVALID_PRODUCER_EPOCH", None, FAIL, "old epoch: rejected"),
    (("send",), "_FENCED", None, FAIL, "the producer was fenced: not sent"),
    (("send",), "OUT_OF_ORDER_SEQUENCE_NUMBER", None, FAIL, "the leader rejected the sequence"),
    (("send",), "INVALID_TXN_STATE", None, FAIL, "rejected"),
    (("send",), "*", None, INFO, "anything else, every retriable error and _MSG_TIMED_OUT, "
     "_PURGE_INFLIGHT, _TRANSPORT included: an earlier attempt may have been appended"),
    (("commit",), "*", "txn_requires_abort", FAIL, "the transaction must be aborted: the "
     "commit did not happen"),
    (("commit",), "_STATE", None, FAIL, "not in a state to commit: no EndTxn was sent"),
    (("commit",), "*", None, INFO, "timeout, retriable, fenced or fatal: a commit already "
     "prepared completes; read back before a redo"),
    (("abort",), "*", None, INFO, "timeout or fatal: the new producer's init_transactions "
     "aborts what is still open"),
    (("init",), "*", "fatal", FAIL, "fatal: give up"),
    (("init",), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", None, FAIL, "not allowed: give up"),
    (("init",), "_INVALID_ARG", None, FAIL, "bad settings: give up"),
    (("init",), "_NOT_CONFIGURED", None, FAIL, "no transactional.id: give up"),
    (("init",), "*", None, INFO, "retried (timeouts, coordinator moving)"),
)  # fmt: skip


def _error(exc: BaseException | Any):
    """The librdkafka ``KafkaError`` in an exception (or the error itself), or None."""
    from confluent_kafka import KafkaError, KafkaException

    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def rule(exc: BaseException | Any, op: str):
    """The row of :data:`TABLE` deciding operation ``op`` that ended with ``exc``."""
    err = _error(exc)
    name = err.name() if err is not None else type(exc).__name__
    for ops, code, pred, outcome, why in TABLE:
        if op not in ops or code not in ("*", name):
            continue
        if pred is not None and not (err is not None and getattr(err, pred)()):
            continue
        return ops, code, pred, outcome, why
    raise ValueError(f"no rule for operation {op!r}")


def classify(exc: BaseException | Any | None, op: str) -> str:
    return OK if exc is None else rule(exc, op)[3]


def describe(exc: BaseException | Any) -> str:
    err = _error(exc)
    if err is not None:
        return f"KafkaError {err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"
