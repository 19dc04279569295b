"""A scenario's [connections] thresholds and [clients] settings."""

from __future__ import annotations

import pytest

from verifier.orchestration.scenario import load_scenario, parse_scenario
from verifier.rundata.errors import UsageError


def test_idle_connections_scenario_sets_the_clients_idle_time():
    s = load_scenario("idle-connections")
    assert s.clients == {"connections_max_idle_ms": 4000}
    assert s.workload.rate * s.clients["connections_max_idle_ms"] / 1000 < 1  # pauses > idle
    assert s.to_json()["connections"]["reconnect_within_s"] == 20


@pytest.mark.parametrize(("text", "fragment"), [
    ("[connections]\nstorm = 3", "unknown keys"),
    ("[connections]\nfail_on = ['leaks']", "fail_on"),
    ("[connections]\nleak_growth = 0", "positive"),
    ("[clients]\nacks = 1", "unknown keys"),
    ("[clients]\nconnections_max_idle_ms = '5s'", "integers"),
])
def test_bad_connection_tables_are_usage_errors(text, fragment):
    with pytest.raises(UsageError, match=fragment):
        parse_scenario(text, "x")
