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


# --- a real Java application's file (issue 13) ----------------------------------------

APP = """
bootstrap.servers=kafka-1:9092,kafka-2:9092
key.serializer=org.apache.kafka.common.serialization.StringSerializer
value.serializer=org.apache.kafka.common.serialization.StringSerializer
acks=all
enable.idempotence=true
compression.type=lz4
linger.ms=10
client.id=orders-app
metadata.max.age.ms=60000
partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner
"""


def _app(tmp_path, text=APP):
    f = tmp_path / "producer.properties"
    f.write_text(text)
    return f


def test_java_runs_the_file_verbatim_but_for_the_replaced_keys(tmp_path):
    from producers.properties import read_user_config

    u = read_user_config(_app(tmp_path), "java")
    assert u.overrides == {
        "acks": "all", "enable.idempotence": "true", "compression.type": "lz4",
        "linger.ms": "10", "client.id": "orders-app", "metadata.max.age.ms": "60000",
        "partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"}
    assert u.settings == {"acks": -1, "enable_idempotence": True, "compression_type": "lz4",
                          "linger_ms": 10}  # what the mode and the checks read
    assert [n.split(":")[0] for n in u.notes] == ["bootstrap.servers", "key.serializer",
                                                  "value.serializer"]
    assert "replaced by the cluster's" in u.notes[0]


@pytest.mark.parametrize("client", ["kafka-python", "librdkafka"])
def test_python_clients_map_java_keys_and_note_the_rest(tmp_path, client):
    from producers.properties import read_user_config

    u = read_user_config(_app(tmp_path), client)
    assert u.settings == u.overrides == {
        "acks": -1, "enable_idempotence": True, "compression_type": "lz4", "linger_ms": 10,
        "client_id": "orders-app"}
    noted = [n.split(":")[0] for n in u.notes]
    assert noted == ["bootstrap.servers", "key.serializer", "value.serializer",
                     "metadata.max.age.ms", "partitioner.class"]
    assert f"{client} has no equivalent" in u.notes[-1]


@pytest.mark.parametrize("client", ["kafka-python", "librdkafka", "java"])
def test_typos_are_refused_with_the_nearest_key(tmp_path, client):
    from producers.properties import read_user_config

    with pytest.raises(UsageError) as err:
        read_user_config(_app(tmp_path, APP + "acsk=all\nlinger.msec=5\n"), client)
    msg = str(err.value)
    assert "unknown producer properties: acsk, linger.msec" in msg
    assert "acsk: did you mean acks?" in msg and "linger.msec: did you mean linger.ms?" in msg


def test_java_only_settings_are_refused_on_python_clients(tmp_path):
    from producers.properties import read_user_config

    text = "interceptor.classes=com.example.Audit\n"
    with pytest.raises(UsageError, match="interceptor.classes.*--client java"):
        read_user_config(_app(tmp_path, text), "kafka-python")
    assert read_user_config(_app(tmp_path, text), "java").overrides == {
        "interceptor.classes": "com.example.Audit"}


def test_java_secrets_reach_the_plan_redactable(tmp_path):
    from producers.properties import read_user_config

    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="u" password="pw";')
    u = read_user_config(_app(tmp_path, f"sasl.jaas.config={jaas}\nacks=all\n"), "java")
    assert u.overrides == {"sasl_plain_username": "u", "sasl_plain_password": "pw",
                           "acks": "all"}  # kafka-python names: redacted in config.json
    with pytest.raises(UsageError, match="ssl.truststore.password") as err:
        read_user_config(_app(tmp_path, "ssl.truststore.password=pw-x\n"), "java")
    assert "pw-x" not in str(err.value)


def test_load_properties_accepts_the_noted_keys(tmp_path):
    notes: list[str] = []
    assert load_properties(_app(tmp_path), notes=notes)["compression_type"] == "lz4"
    assert len(notes) == 5
