"""The Java generator's exception table (producers/java .../Outcomes.java): what each Java
client exception means for each operation, and docs/java-generator.md holding the same
rows. Runs the built generator (one JVM for all cases); skipped when it is not built."""

from __future__ import annotations

import subprocess

import pytest

from producers.clients import JAVA_MAIN
from verifier.rundata import jvm

E = "org.apache.kafka.common.errors."

#: (operation, exception class, message) -> outcome
CASES = [
    ("enqueue", E + "TimeoutException", "Topic t not present in metadata after 60000 ms.", "fail"),
    ("enqueue", "org.apache.kafka.common.KafkaException", "Cannot perform send", "fail"),
    ("begin", "java.lang.IllegalStateException", "fenced", "fail"),
    # retriable: an earlier attempt may have been appended
    ("send", E + "TimeoutException", "Expiring 3 record(s)", "info"),
    ("send", E + "NetworkException", "disconnected", "info"),
    ("send", E + "NotLeaderOrFollowerException", "x", "info"),
    ("send", E + "NotEnoughReplicasException", "x", "info"),
    ("send", E + "NotEnoughReplicasAfterAppendException", "x", "info"),
    ("send", E + "CorruptRecordException", "x", "info"),
    ("send", "java.lang.RuntimeException", "never seen before", "info"),
    # rejected, or never sent
    ("send", E + "RecordTooLargeException", "x", "fail"),
    ("send", E + "TopicAuthorizationException", "x", "fail"),  # via AuthorizationException
    ("send", E + "ProducerFencedException", "x", "fail"),
    ("send", E + "InvalidProducerEpochException", "x", "fail"),
    ("send", E + "OutOfOrderSequenceException", "x", "fail"),
    ("send", E + "TransactionAbortedException", "x", "fail"),
    # a subclass of OutOfOrderSequenceException with its own row, first
    ("send", E + "UnknownProducerIdException", "x", "info"),
    # commit: only what certainly did not commit is fail
    ("commit", "org.apache.kafka.common.KafkaException",
     "Cannot execute transactional method because we are in an error state", "fail"),
    ("commit", "java.lang.IllegalStateException", "Producer with transactionalId 'x' cannot "
     "execute transactional method because of previous invalid state transition attempt",
     "fail"),
    ("commit", E + "TransactionAbortableException", "x", "fail"),
    ("commit", E + "TimeoutException", "Timeout expired after 60000ms", "info"),
    ("commit", E + "ProducerFencedException", "fenced", "info"),
    ("commit", "org.apache.kafka.common.KafkaException", "Unhandled error", "info"),
    ("abort", E + "TimeoutException", "x", "info"),
    ("abort", E + "ProducerFencedException", "x", "info"),
    ("init", E + "TimeoutException", "x", "info"),
    ("init", E + "ConcurrentTransactionsException", "x", "info"),
    ("init", E + "TransactionalIdAuthorizationException", "x", "fail"),
    ("init", "org.apache.kafka.common.config.ConfigException", "x", "fail"),
]


@pytest.fixture(scope="module")
def java_cmd() -> list[str]:
    if not jvm.java_generator_built():
        pytest.skip("the Java generator is not built (or its sources changed): "
                    "run `make setup`")
    return [jvm.java_executable(), "-cp", jvm.java_generator_jars().classpath(), JAVA_MAIN]


def test_each_exception_has_the_outcome_of_its_row(java_cmd):
    stdin = "".join(f"{op}\t{cls}\t{msg}\n" for op, cls, msg, _ in CASES)
    out = subprocess.run([*java_cmd, "--classify"], input=stdin, capture_output=True,
                         text=True, timeout=60, check=True).stdout.splitlines()
    got = [line.split("\t")[0] for line in out]
    wrong = [(op, cls.rsplit(".", 1)[-1], want, have, line)
             for (op, cls, _, want), have, line in zip(CASES, got, out, strict=True)
             if want != have]
    assert not wrong, wrong


def test_the_docs_show_the_table_row_for_row(java_cmd):
    table = subprocess.run([*java_cmd, "--outcome-table"], capture_output=True, text=True,
                           timeout=60, check=True).stdout.strip()
    doc = (jvm.PROJECT_ROOT / "docs" / "java-generator.md").read_text()
    assert table in doc, "docs/java-generator.md: paste the output of --outcome-table"
    rows = table.splitlines()[2:]
    ops = [r.split("|")[1].strip() for r in rows]
    for op in ("send", "commit", "abort", "init"):  # every operation ends with a catch-all
        last = max(i for i, o in enumerate(ops) if o == op)
        assert rows[last].split("|")[2].strip() == "`*`", rows[last]
