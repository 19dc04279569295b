"""Presets, their layering and conflicts; the effective-settings check."""

from __future__ import annotations

import pytest

from producers import config as cfg
from verifier.rundata.errors import UsageError


@pytest.mark.parametrize("mode", cfg.MODES)
def test_every_preset_sets_every_mode_defining_setting(mode):
    preset = cfg.PRESETS[mode]
    for key in ("enable_idempotence", "acks", "retries", "max_in_flight_requests_per_connection"):
        assert key in preset, f"{mode} leaves {key} to kafka-python's default"
    s = cfg.resolve(mode, transactional_id="r.p")
    for knob in ("batch_size", "linger_ms", "buffer_memory", "record_size"):
        assert knob in s


def test_presets_are_frozen():
    with pytest.raises(TypeError):
        cfg.PRESETS["idempotent"]["acks"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        cfg.resolve("idempotent")["acks"] = 1  # type: ignore[index]


@pytest.mark.parametrize("mode, idem, acks, retries", [
    ("at-most-once", False, 1, 0),
    ("at-least-once", False, -1, cfg.MAX_INT),
    ("idempotent", True, -1, cfg.MAX_INT),
    ("transactional", True, -1, cfg.MAX_INT),
])
def test_preset_values(mode, idem, acks, retries):
    s = cfg.resolve(mode, transactional_id="run.tx-0")
    assert (s["enable_idempotence"], s["acks"], s["retries"]) == (idem, acks, retries)
    assert (s.get("transactional_id") == "run.tx-0") == (mode == "transactional")


def test_layering_defaults_preset_overrides():
    s = cfg.resolve("at-least-once", {"linger_ms": 50, "max_in_flight_requests_per_connection": 1})
    assert s["linger_ms"] == 50 and s["max_in_flight_requests_per_connection"] == 1
    assert s["batch_size"] == cfg.DEFAULTS["batch_size"]
    assert cfg.resolve("at-most-once", {"acks": 0})["acks"] == 0  # the acks=0 variant


@pytest.mark.parametrize("mode, overrides, keys", [
    ("idempotent", {"acks": 1}, ["enable.idempotence=true", "acks=1"]),
    ("idempotent", {"retries": 0}, ["retries=0"]),
    ("idempotent", {"max_in_flight_requests_per_connection": 6},
     ["max.in.flight.requests.per.connection=6"]),
    ("idempotent", {"enable_idempotence": False}, ["enable.idempotence=false"]),
    ("transactional", {"acks": 1}, ["acks=1"]),
    ("at-most-once", {"retries": 3}, ["retries=3"]),
    ("at-most-once", {"enable_idempotence": True}, ["enable.idempotence=true"]),
    ("at-least-once", {"retries": 0}, ["retries=0"]),
    ("at-least-once", {"acks": 0}, ["acks=0"]),
    ("idempotent", {"transactional_id": "x"}, ["transactional.id=x"]),
])
def test_conflicting_overrides_name_the_keys(mode, overrides, keys):
    with pytest.raises(UsageError) as err:
        cfg.resolve(mode, overrides, transactional_id="r.p")
    for key in keys:
        assert key in str(err.value)


def test_delivery_timeout_must_cover_linger_plus_request_timeout():
    with pytest.raises(UsageError, match=r"delivery.timeout.ms=1000 is below linger.ms \+ "
                                         r"request.timeout.ms = 100 \+ 30000"):
        cfg.resolve("idempotent", {"delivery_timeout_ms": 1000, "linger_ms": 100})
    cfg.resolve("idempotent", {"delivery_timeout_ms": 30100, "linger_ms": 100})


def test_unknown_mode():
    with pytest.raises(UsageError, match="unknown mode"):
        cfg.resolve("exactly-once")


def test_silent_downgrade_is_detected():
    s = cfg.resolve("idempotent")
    downgraded = {**cfg.producer_kwargs(s), "enable_idempotence": False}
    with pytest.raises(UsageError, match="enable.idempotence: asked true, got false"):
        cfg.check_effective(s, downgraded, transactional=False)
    cfg.check_effective(s, cfg.producer_kwargs(s), transactional=False)


def test_secrets_redacted_and_generator_knobs_not_passed_to_kafka_python():
    s = cfg.resolve("idempotent", {"sasl_plain_password": "hunter2", "ssl_password": "pw"})
    shown = cfg.redacted(s)
    assert shown["sasl_plain_password"] == shown["ssl_password"] == "***"
    assert "hunter2" not in repr(shown)
    kwargs = cfg.producer_kwargs(s)
    assert "buffer_memory" not in kwargs and "record_size" not in kwargs


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_builds_on_kafka_python(codec):
    # kafka-python needs lz4 / python-snappy / zstandard (pyproject's extras)
    assert cfg.codec_problem(codec) is None
    assert cfg.check_buildable("idempotent", {"compression_type": codec})


def test_a_missing_codec_is_refused_in_one_line(monkeypatch):
    import kafka.codec

    monkeypatch.setattr(kafka.codec, "has_lz4", lambda: False)
    with pytest.raises(UsageError, match=r"compression.type=lz4: .*kafka-python\[lz4\]"):
        cfg.check_buildable("idempotent", {"compression_type": "lz4"})
