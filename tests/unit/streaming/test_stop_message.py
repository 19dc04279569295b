"""The message a stopped pipeline query is reported with: Spark's own text and its causes
(streaming.pipelines.driver.stop_message), on hand-written exceptions shaped like
PySpark's (``desc``, and ``_origin``: the Java exception through py4j)."""

from __future__ import annotations

from streaming.pipelines.driver import stop_message


class Java:
    def __init__(self, message, cause=None):
        self.message, self.cause = message, cause

    def toString(self):  # noqa: N802 - the Java method's name
        return self.message

    def getCause(self):  # noqa: N802
        return self.cause


class Converted(Exception):
    """A Java cause as PySpark converts it: its ``toString`` as ``_desc``, its own cause
    converted (``_cause``), no Java object kept (``_origin`` None)."""

    def __init__(self, desc, cause=None):
        self._desc, self._cause, self._origin = desc, cause, None


class Stopped(Exception):
    """As PySpark's StreamingQuery.exception() builds it: the message, the cause chain
    converted."""

    _desc = ("[TASK_WRITE_FAILED] Task failed while writing rows to file:/out.\n"
             "=== Streaming Query ===\nIdentifier: pipeline-delta")
    _origin = None
    _cause = Converted("org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed "
                       "while writing rows to file:/out.", Converted(
                           "KafkaIllegalStateException: Some data may have been lost because "
                           "they are not available in Kafka any more;\neither the data was "
                           "aged out by Kafka", Converted("OffsetOutOfRangeException: Offsets "
                                                          "out of range")))

    def __str__(self):
        return self._desc


class FromJava(Exception):
    """A cause that still holds its Java exception (``_origin``): the rest is read there."""

    _origin = None
    _cause = Converted("x", None)

    def __init__(self):
        self._cause = type("C", (), {"_origin": Java("Top: t", Java("Kafka: lost"))})()

    def __str__(self):
        return "stopped"


class Query:
    def __init__(self, exc):
        self.exc = exc

    def exception(self):
        return self.exc


def test_the_cause_under_a_task_failure_is_in_the_message():
    # a retention-loss run reported only the task failure: the data loss was its cause
    assert stop_message(Query(Stopped())) == (
        "[TASK_WRITE_FAILED] Task failed while writing rows to file:/out.; caused by: "
        "org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows "
        "to file:/out.; caused by: KafkaIllegalStateException: Some data may have been lost "
        "because they are not available in Kafka any more; either the data was aged out by "
        "Kafka; caused by: OffsetOutOfRangeException: Offsets out of range")


def test_a_cause_that_holds_its_java_exception_is_read_from_the_jvm():
    assert stop_message(Query(FromJava())) == "stopped; caused by: Top: t; caused by: Kafka: lost"


def test_a_query_without_an_exception_says_so():
    assert stop_message(Query(None)) == "the query stopped without an exception"
