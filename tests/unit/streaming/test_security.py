"""Security settings as the Spark Kafka source's ``kafka.*`` options."""

from __future__ import annotations

import pytest

from streaming.security import spark_kafka_options
from verifier.rundata.errors import UsageError


def test_sasl_plain_becomes_a_jaas_config():
    opts = spark_kafka_options({"security_protocol": "SASL_PLAINTEXT",
                                "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
                                "sasl_plain_password": 'pa"ss'})
    assert opts == {
        "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                  'required username="alice" password="pa\\"ss";',
    }


def test_scram_and_ssl():
    opts = spark_kafka_options({"security_protocol": "SASL_SSL",
                                "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "u",
                                "sasl_plain_password": "p", "ssl_cafile": "/ca.pem",
                                "ssl_check_hostname": False})
    assert "ScramLoginModule" in opts["kafka.sasl.jaas.config"]
    assert opts["kafka.ssl.truststore.location"] == "/ca.pem"
    assert opts["kafka.ssl.truststore.type"] == "PEM"
    assert opts["kafka.ssl.endpoint.identification.algorithm"] == ""


def test_nothing_to_map():
    assert spark_kafka_options({}) == {}


def test_what_the_java_client_cannot_take_is_named():
    with pytest.raises(UsageError, match="ssl_crlfile"):
        spark_kafka_options({"security_protocol": "SSL", "ssl_crlfile": "/crl.pem"})
    with pytest.raises(UsageError, match="one PEM file"):
        spark_kafka_options({"ssl_certfile": "/c.pem", "ssl_keyfile": "/k.pem"})


def test_the_observer_reads_its_run_and_security_from_the_plan(tmp_path, monkeypatch):
    from streaming.observer import parse_args
    from verifier.rundata.plan import PlannedProducer, RunPlan

    plan = RunPlan(run="r", scenario="s", seed=1, sink="at-least-once",
                   bootstrap_servers="b:1", spark_master="local[1]",
                   security={"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                             "sasl_plain_username": "u", "sasl_plain_password": "pw"},
                   producers={p: PlannedProducer(p, p, p, f"t.{p}") for p in ("a", "b")})
    path = plan.write(tmp_path / "config.json")
    for key, value in plan.child_env().items():
        monkeypatch.setenv(key, value)
    args = parse_args(["--plan", str(path), "--trigger-ms", "100"])
    assert (args.run_dir, args.run_id, args.topics) == (tmp_path, "r", ["t.a", "t.b"])
    assert (args.sink, args.spark_master, args.trigger_ms) == ("at-least-once", "local[1]", 100)
    assert 'password="pw"' in args.security["kafka.sasl.jaas.config"]
    with pytest.raises(SystemExit):
        parse_args(["--plan", str(path), "--run-id", "x"])
    args = parse_args(["--run-dir", "d", "--bootstrap-servers", "b", "--topics", "x,y",
                       "--run-id", "r"])  # standalone, as before
    assert args.topics == ["x", "y"] and args.sink == "exactly-once" and args.security == {}
