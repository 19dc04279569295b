"""The message a stopped pipeline query is reported with: Spark's own text and its causes
(streaming.pipelines.driver.stop_message), on hand-written exceptions shaped like
PySpark's (``desc``, and ``_origin``: the Java exception through py4j)."""

from __future__ import annotations

from streaming.pipelines.driver import stop_message


class Java:
    def __init__(self, message, cause=None):
        self.message, self.cause = message, cause

    def getMessage(self):  # noqa: N802 - the Java method's name
        return self.message

    def getCause(self):  # noqa: N802
        return self.cause


class Stopped(Exception):
    desc = ("[TASK_WRITE_FAILED] Task failed while writing rows to file:/out.\n"
            "=== Streaming Query ===\nIdentifier: pipeline-delta")
    _origin = Java("[TASK_WRITE_FAILED] Task failed while writing rows to file:/out.", Java(
        "Some data may have been lost because they are not available in Kafka any more;\n"
        "either the data was aged out by Kafka", Java("Offsets out of range")))


class Cause(Exception):
    """A converted Java cause (pyspark.errors.exceptions.captured.convert_exception)."""

    def __init__(self, origin):
        self._origin = origin


class FromStream(Exception):
    """As PySpark's StreamingQuery.exception() builds it: a message, and the Java
    exception's cause converted (``_cause``), no ``_origin`` of its own."""

    _desc = "[TASK_WRITE_FAILED] Task failed while writing rows to file:/out."
    _cause = Cause(Stopped._origin.cause)

    def __str__(self):
        return self._desc


class Query:
    def __init__(self, exc):
        self.exc = exc

    def exception(self):
        return self.exc


def test_the_cause_under_a_task_failure_is_in_the_message():
    # a retention-loss run reported only the task failure: the data loss was its cause
    assert stop_message(Query(Stopped())) == (
        "[TASK_WRITE_FAILED] Task failed while writing rows to file:/out.; caused by: Some "
        "data may have been lost because they are not available in Kafka any more; either "
        "the data was aged out by Kafka; caused by: Offsets out of range")


def test_a_query_without_an_exception_says_so():
    assert stop_message(Query(None)) == "the query stopped without an exception"


def test_a_streaming_query_exception_s_cause_chain_is_read_from_its_cause():
    assert stop_message(Query(FromStream())) == (
        "[TASK_WRITE_FAILED] Task failed while writing rows to file:/out.; caused by: Some "
        "data may have been lost because they are not available in Kafka any more; either "
        "the data was aged out by Kafka; caused by: Offsets out of range")
