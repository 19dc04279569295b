"""`verifier chaos` starts its verification's Spark beside the cluster: the runs get the
session, or the Future of its start-up, and take the session out of it when they verify."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from verifier.orchestration.verify import spark_of


def test_a_session_is_used_as_is():
    assert spark_of("session") == "session"


def test_a_session_still_starting_is_waited_for():
    started: Future = Future()
    started.set_result("session")
    assert spark_of(started) == "session"


def test_a_session_that_could_not_start_fails_where_it_is_used():
    failed: Future = Future()
    failed.set_exception(RuntimeError("JAVA_GATEWAY_EXITED"))
    with pytest.raises(RuntimeError, match="JAVA_GATEWAY_EXITED"):
        spark_of(failed)
