"""`verifier advise` on real files from the wild (issue 49; tests/data/advise/README.md
names each file's source). Each case failed on the advisor before issue 49:

- a librdkafka name (``message.timeout.ms``, ``request.required.acks``) was translated for
  the Java client and kafka-python too, which then were judged on settings they never run;
- a file librdkafka refuses (a key it does not know) was still given a guarantee;
- keys no client of today reads (Kafka 0.7's ``broker.list``) passed without a word;
- ``key=value   # comment`` was refused without saying that Java properties have no
  inline comments;
- nothing said which client a file was judged on when ``--client`` was not given.

Every case goes through the command line, as a user meets it. The client checks are the
real clients' (kafka-python and confluent-kafka as installed); the Java cases name Java
4.1.0, a version not built here, so no JVM starts in the unit tier (the advice for 4.x
applies; the Java check itself is the integration tier's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifier.cli import main

DATA = Path(__file__).resolve().parents[2] / "data" / "advise"
KAFKA_07 = DATA / "kafka-0.7-producer.properties"
REPRODUCE = DATA / "reproduce-kafka.conf"
IDEMPOTENT_COMMENTED = DATA / "best-practices-idempotent.properties"
TXN_COMMENTED = DATA / "best-practices-transactional.properties"
STRIMZI_TXN = DATA / "strimzi-transactional.properties"


JAVA = ("--client", "java", "--client-version", "4.1.0")


def _json(capsys, *argv) -> tuple[int, dict]:
    code = main(["advise", *map(str, argv), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["configurations"][0]


# ---- a librdkafka name is librdkafka's alone -------------------------------------------

def test_librdkafka_names_are_not_read_for_the_java_producer(capsys):
    """REproduce's file: request.required.acks=1 and message.timeout.ms=300000 are
    librdkafka's names. The Java producer ignores both: it runs acks=all with idempotence
    (its 4.x defaults), so the file on Java is idempotent, not 'none'."""
    _, entry = _json(capsys, REPRODUCE, *JAVA)
    advice = entry["advice"]
    assert "acks" not in advice["settings"] and "delivery.timeout.ms" not in advice["settings"]
    assert advice["effective"]["acks"] == "all"  # Java's default: the file's acks is not Java's
    assert advice["mode"] == "idempotent", advice["guarantee"]
    ignored = next(n for n in entry["notes"] if n.startswith("java does not read"))
    for key in ("request.required.acks", "message.timeout.ms", "message.copy.max.bytes"):
        assert key in ignored
    assert "supplied but are not used yet" in ignored  # the Java producer's own words


def test_a_short_librdkafka_timeout_does_not_make_java_refuse(capsys, tmp_path):
    """message.timeout.ms=10000 (kcat's -X in a public script) read as Java's
    delivery.timeout.ms made the table 'refuse' it for Java (below linger.ms +
    request.timeout.ms); Java never reads it."""
    conf = tmp_path / "kcat.conf"
    conf.write_text("message.timeout.ms=10000\n")
    _, entry = _json(capsys, conf, *JAVA)
    assert entry["advice"]["refused"] == []
    assert entry["advice"]["mode"] == "idempotent"


def test_librdkafka_still_reads_its_own_names(capsys):
    code, entry = _json(capsys, REPRODUCE, "--client", "librdkafka")
    advice = entry["advice"]
    assert advice["settings"]["acks"] == "1" and advice["settings"]["delivery.timeout.ms"] == 300000
    assert entry["check"]["ok"] is True  # librdkafka accepts its own file
    assert any("section headers [global], [topic] skipped" in n for n in entry["notes"])


# ---- a refused file gets no guarantee --------------------------------------------------

def test_a_file_librdkafka_refuses_gets_no_guarantee(capsys):
    code, entry = _json(capsys, KAFKA_07, "--client", "librdkafka")
    assert code == 1
    assert entry["check"]["ok"] is False
    assert 'No such configuration property: "broker.list"' in entry["check"]["error"]
    assert entry["advice"]["guarantee"] == "none: librdkafka refuses this configuration"
    assert entry["advice"]["mode"] is None
    assert entry["findings"] == []  # the client and the advice agree: refused


# ---- unknown keys are named, with the client's own word ---------------------------------

def test_kafka_07_keys_are_named_for_java(capsys):
    _, entry = _json(capsys, KAFKA_07, *JAVA)
    [ignored] = [n for n in entry["notes"] if n.startswith("java does not read")]
    for key in ("broker.list", "producer.type", "compression.codec", "serializer.class"):
        assert key in ignored
    assert "broker.list (the old Scala producer's, Kafka 0.7/0.8; today: bootstrap.servers)" \
        in ignored


def test_kafka_07_file_is_refused_by_kafka_python_in_its_own_words(capsys):
    code, entry = _json(capsys, KAFKA_07)
    assert code == 1
    assert entry["check"]["ok"] is False
    assert "Unrecognized configs" in entry["check"]["error"]  # kafka-python's own message
    assert "broker_list" in entry["check"]["error"]
    [refusal] = [r for r in entry["advice"]["refused"] if r["id"] == "unknown-keys"]
    assert "kafka-python does not read broker.list" in refusal["reason"]
    assert entry["advice"]["guarantee"].startswith("none")


# ---- an inline comment is explained ----------------------------------------------------

def test_an_inline_comment_is_explained_when_it_breaks_a_value(capsys):
    code = main(["advise", str(IDEMPOTENT_COMMENTED)])
    err = capsys.readouterr().err
    assert code == 64
    assert "enable.idempotence" in err
    assert "Java properties have no inline comments" in err


def test_an_inline_comment_in_a_string_value_is_named(capsys):
    """transactional.id=my-app-instance-1  # Unique per producer instance: every client
    takes the comment as part of the id."""
    _, entry = _json(capsys, TXN_COMMENTED)
    [note] = [n for n in entry["notes"] if "inline comments" in n]
    assert note.startswith("transactional.id: Java properties have no inline comments")
    assert "'my-app-instance-1  # Unique per producer instance'" in note


def test_chaos_says_why_a_commented_value_is_bad():
    from producers.properties import read_user_config
    from verifier.rundata.errors import UsageError

    with pytest.raises(UsageError, match="Java properties have no inline comments"):
        read_user_config(IDEMPOTENT_COMMENTED, "kafka-python")


# ---- which client a file was judged on --------------------------------------------------

def test_the_client_line_when_no_client_is_given(capsys):
    main(["advise", str(REPRODUCE)])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "judged on" in x)
    assert "judged on kafka-python (no --client given: the default)" in line
    assert "its keys suggest librdkafka (message.max.bytes, message.copy.max.bytes, " \
           "request.required.acks, message.timeout.ms, offset.store.method)" in line
    assert "--client librdkafka" in line


def test_the_client_line_when_the_client_is_given(capsys):
    _, entry = _json(capsys, STRIMZI_TXN, *JAVA)
    assert entry["notes"][0] == "judged on java"  # its keys are every client's
    assert entry["advice"]["mode"] == "transactional"
