"""The librdkafka generator's exception table (producers/rdkafka_outcomes.py) and its settings."""

from __future__ import annotations

import pytest

ck = pytest.importorskip("confluent_kafka")

from producers.config import MODES, resolve  # noqa: E402
from producers.rdkafka_outcomes import TABLE, classify, librdkafka_config, redacted_config  # noqa: E402
from verifier.rundata.errors import UsageError  # noqa: E402

KE, KX = ck.KafkaError, ck.KafkaException


@pytest.mark.parametrize("op, err, outcome", [
    ("enqueue", BufferError("Local: Queue full"), "fail"),
    ("enqueue", KX(KE(KE._UNKNOWN_PARTITION)), "fail"),
    ("begin", KX(KE(KE._STATE)), "fail"),
    ("send", KE(KE._MSG_TIMED_OUT), "info"),  # may have been appended before the timeout
    ("send", KE(KE._TRANSPORT), "info"),
    ("send", KE(KE._PURGE_INFLIGHT), "info"),
    ("send", KE(KE.NOT_ENOUGH_REPLICAS_AFTER_APPEND), "info"),
    ("send", KE(KE.UNKNOWN_PRODUCER_ID), "info"),
    ("send", KE(KE._PURGE_QUEUE), "fail"),  # never left the queue
    ("send", KE(KE.MSG_SIZE_TOO_LARGE), "fail"),
    ("send", KE(KE.PRODUCER_FENCED), "fail"),
    ("send", KE(KE.OUT_OF_ORDER_SEQUENCE_NUMBER), "fail"),
    ("send", KE(KE.DUPLICATE_SEQUENCE_NUMBER), "ok"),
    ("commit", KX(KE(KE.INVALID_TXN_STATE, "x", txn_requires_abort=True)), "fail"),
    ("commit", KX(KE(KE._STATE)), "fail"),
    ("commit", KX(KE(KE._TIMED_OUT, "x", retriable=True)), "info"),
    ("commit", KX(KE(KE._FENCED, "x", fatal=True)), "info"),
    ("abort", KX(KE(KE._TIMED_OUT)), "info"),
    ("init", KX(KE(KE._TIMED_OUT, "x", retriable=True)), "info"),
    ("init", KX(KE(KE._FENCED, "x", fatal=True)), "fail"),
    ("init", KX(KE(KE.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)), "fail"),
])
def test_each_error_has_the_outcome_of_its_row(op, err, outcome):
    assert classify(err, op) == outcome
    assert classify(None, op) == "ok"


def test_every_operation_ends_with_a_catch_all():
    for op in ("enqueue", "begin", "send", "commit", "abort", "init"):
        rows = [r for r in TABLE if op in r[0]]
        assert rows[-1][1] == "*" and rows[-1][2] is None, rows[-1]


@pytest.mark.parametrize("mode", MODES)
def test_presets_map_onto_librdkafka_and_it_accepts_them(mode):
    conf = librdkafka_config(resolve(mode, transactional_id="t"), "127.0.0.1:1", "c")
    assert conf["acks"] == (1 if mode == "at-most-once" else "all")
    assert conf["enable.idempotence"] is (mode in ("idempotent", "transactional"))
    ck.Producer(conf)  # librdkafka checks the properties and their combination


def test_secrets_are_redacted_and_unknown_settings_refused():
    conf = librdkafka_config({"sasl_plain_password": "pw", "sasl_plain_username": "u"},
                             "b:1", "c")
    assert redacted_config(conf)["sasl.password"] == "***"
    with pytest.raises(UsageError, match="no equivalent for metadata_max_age_ms"):
        librdkafka_config({"metadata_max_age_ms": 1}, "b:1", "c")


def test_the_idle_connections_setting_reaches_librdkafka():
    conf = librdkafka_config({**resolve("idempotent"), "connections_max_idle_ms": 4000},
                             "127.0.0.1:1", "c")
    assert conf["connections.max.idle.ms"] == 4000
    ck.Producer(conf)


def test_the_docs_show_the_table_row_for_row():
    from verifier.rundata.jvm import PROJECT_ROOT

    doc = (PROJECT_ROOT / "docs" / "librdkafka-generator.md").read_text()
    for ops, code, pred, outcome, why in TABLE:
        when = f"`{pred}()`" if pred else ""
        assert f"| {', '.join(ops)} | `{code}` | {when} | {outcome} | {why} |" in doc, code


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_builds_on_librdkafka(codec):
    import confluent_kafka

    from producers.rdkafka_outcomes import librdkafka_config

    conf = librdkafka_config({"compression_type": codec}, "127.0.0.1:1", "t")
    assert conf["compression.type"] == codec
    del conf["bootstrap.servers"]  # nothing is connected
    confluent_kafka.Producer({**conf, "log_level": 0})  # librdkafka refuses an unbuilt codec


class _Msg:
    """Stands in for a delivery report's message (key and offset are all the emitter reads)."""

    def __init__(self, key: bytes, offset: int) -> None:
        self._key, self._offset = key, offset

    def key(self) -> bytes:
        return self._key

    def offset(self) -> int:
        return self._offset


@pytest.mark.parametrize("acks", [1, 0])
def test_plain_reports_name_their_record_by_its_key(acks):
    """Plain sends share one delivery callback; the completion line takes partition and
    sequence from the message's key (a pid may hold colons) and its outcome from the error."""
    import json
    from types import SimpleNamespace

    from producers.rdkafka_emitter import RdEmitter
    from verifier.rundata.history import ok_send_line

    settings = {"record_size": 100, "max_block_ms": 1000, "delivery_timeout_ms": 1000,
                "request_timeout_ms": 1000}
    spec = SimpleNamespace(settings=settings, topic="t", run_id="r", pid="a:b",
                           user_input=None)
    em = RdEmitter(None, SimpleNamespace(spec=spec, writer=None, ses=3), acks)
    em._report(None, _Msg(b"a:b:2:17", 41))
    em._report(KE(KE._MSG_TIMED_OUT), _Msg(b"a:b:0:5", -1001))
    em._report(KE(KE.MSG_SIZE_TOO_LARGE), _Msg(b"a:b:1:9", -1001))
    raw = em._completion_lines().splitlines(keepends=True)
    lines = [json.loads(x) for x in raw]
    if acks:  # the fast path's ok line, byte for byte the shared format
        assert raw[0] == ok_send_line(3, 2, 17, None, 41, lines[0]["t"])
    assert [(x["type"], x["p"], x["seq"], x["ses"], x["txn"]) for x in lines] == [
        ("ok" if acks else "info", 2, 17, 3, None), ("info", 0, 5, 3, None),
        ("fail", 1, 9, 3, None)]
    assert lines[0].get("offset") == (41 if acks else None)
    assert "offset" not in lines[1] and "error" in lines[1] and "error" in lines[2]
    assert em._completion_lines() == b""  # each report written once
