"""A replaced answer (the error-answer fault's ``replace``: the broker did the work, the
client is told it failed) must never be taken for a definite failure: the judge would
then hold a record that exists for one that cannot. Every error such an answer may carry
(verifier.harness.faults.rule_params.REPLACE_ERRORS, the retriable ones) ends a send and
a commit ``info`` in each client's outcome table: kafka-python's (producers.outcomes),
librdkafka's (producers.rdkafka_outcomes) and the Java generator's (Outcomes.java, read
as text here: its own test needs a JVM). ``info`` sends are never required and may show
once or more (docs/expectations.md); what a mode may show is the expectation table's.
"""

from __future__ import annotations

import re
from pathlib import Path

import kafka.errors as KE
import pytest

from producers import outcomes
from verifier.harness.faults.rule_params import REPLACE_ERRORS
from verifier.harness.kafka_wire import ERROR_CODES

OUTCOMES_JAVA = (Path(__file__).resolve().parents[3] / "producers" / "java" / "src" / "main"
                 / "java" / "verifier" / "generator" / "Outcomes.java")
#: Kafka's error names whose Java exception is not named after them
JAVA_NAMES = {"TIMEOUT": "REQUEST_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER": "NOT_LEADER_OR_FOLLOWER"}


def test_replace_takes_only_the_errors_a_broker_that_did_the_work_answers():
    assert {"REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "NOT_LEADER_OR_FOLLOWER",
            "CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS"} <= set(REPLACE_ERRORS)
    assert not {"MESSAGE_TOO_LARGE", "INVALID_TXN_STATE", "OUT_OF_ORDER_SEQUENCE_NUMBER",
                "TRANSACTION_ABORTABLE", "PRODUCER_FENCED"} & set(REPLACE_ERRORS)


@pytest.mark.parametrize("name", REPLACE_ERRORS)
def test_kafka_python_takes_a_replaced_answer_as_unknown(name):
    exc = KE.for_code(ERROR_CODES[name])()
    assert outcomes.classify(exc, "send") == outcomes.Outcome.INFO
    assert outcomes.classify(exc, "commit") == outcomes.Outcome.INFO


@pytest.mark.parametrize("name", REPLACE_ERRORS)
def test_librdkafka_takes_a_replaced_answer_as_unknown(name):
    ck = pytest.importorskip("confluent_kafka")
    from producers.rdkafka_outcomes import classify

    err = ck.KafkaError(ERROR_CODES[name])
    assert classify(err, "send") == "info"
    assert classify(ck.KafkaException(err), "commit") == "info"


def _java_failures() -> set[str]:
    """The exceptions the Java table maps to fail for a send or a commit, as Kafka's
    error names (``NotEnoughReplicasAfterAppendException``: NOT_ENOUGH_REPLICAS_AFTER_APPEND)."""
    rows = re.findall(r'r\("(send|commit)", "([\w.]+)", (?:"[^"]*", )?FAIL',
                      OUTCOMES_JAVA.read_text())
    names = set()
    for _, exc in rows:
        simple = exc.rsplit(".", 1)[-1].removesuffix("Exception")
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", simple).upper()
        names.add(JAVA_NAMES.get(snake, snake))
    return names


def test_the_java_table_fails_no_send_or_commit_a_replaced_answer_may_end_with():
    failures = _java_failures()
    assert {"RECORD_TOO_LARGE", "OUT_OF_ORDER_SEQUENCE", "INVALID_TXN_STATE"} <= failures
    assert not failures & set(REPLACE_ERRORS), failures & set(REPLACE_ERRORS)
