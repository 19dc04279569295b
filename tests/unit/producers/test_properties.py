"""Java-style properties mapped onto the generator's settings."""

from __future__ import annotations

import pytest

from producers.properties import load_properties, map_properties, parse_properties_text
from verifier.rundata.errors import UsageError

FILE = r"""
# a user's producer.properties
acks=all
enable.idempotence = true
retries: 10
max.in.flight.requests.per.connection=5
batch.size=65536
linger.ms=20
buffer.memory=1048576
delivery.timeout.ms=60000
request.timeout.ms=20000
compression.type=none
transaction.timeout.ms=15000
transactional.id=my-app-1
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="alice" password="s3cr3t-jaas";
ssl.truststore.type=PEM
ssl.truststore.location=/etc/kafka/ca.pem
ssl.key.password=s3cr3t-key
ssl.endpoint.identification.algorithm=
"""


def test_every_listed_key_maps(tmp_path):
    f = tmp_path / "p.properties"
    f.write_text(FILE)
    s = load_properties(f, ["linger.ms=7"])
    assert s == {
        "acks": -1, "enable_idempotence": True, "retries": 10,
        "max_in_flight_requests_per_connection": 5, "batch_size": 65536, "linger_ms": 7,
        "buffer_memory": 1048576, "delivery_timeout_ms": 60000, "request_timeout_ms": 20000,
        "compression_type": None, "transaction_timeout_ms": 15000,
        "transactional_id": "my-app-1", "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cr3t-jaas", "ssl_cafile": "/etc/kafka/ca.pem",
        "ssl_password": "s3cr3t-key", "ssl_check_hostname": False,
    }


def test_unknown_keys_are_named(tmp_path):
    f = tmp_path / "p.properties"
    f.write_text("acks=all\nlinger.msec=5\nfoo.bar=1\n")
    with pytest.raises(UsageError) as err:
        load_properties(f)
    assert "unknown producer properties: foo.bar, linger.msec" in str(err.value)
    assert str(f) in str(err.value)


def test_bad_values_never_show_secrets():
    with pytest.raises(UsageError) as err:
        map_properties([("acks", "2"), ("sasl.mechanism", "NOPE")], "f")
    assert "acks=2" in str(err.value) and "sasl.mechanism=NOPE" in str(err.value)
    jaas = 'org.example.OtherLoginModule required username="a" password="pw-jaas";'
    with pytest.raises(UsageError) as err:
        map_properties([("sasl.jaas.config", jaas)], "f")
    assert "pw-jaas" not in str(err.value)
    with pytest.raises(UsageError) as err:
        map_properties([("ssl.keystore.type", "JKS"), ("ssl.key.password", "pw-x")], "f")
    assert "PEM" in str(err.value) and "pw-x" not in str(err.value)


def test_set_needs_key_value():
    with pytest.raises(UsageError, match="expected key=value"):
        load_properties(None, ["acks"])


def test_comments_and_continuations():
    pairs = parse_properties_text("! c\n# c\n\na = 1\nb:2\nc=x\\\n  y\n", "t")
    assert pairs == [("a", "1"), ("b", "2"), ("c", "xy")]
