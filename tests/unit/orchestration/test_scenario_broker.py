"""A scenario's [broker] table: parsing, validation, scaling, and the dynamic table as a
broker-config fault of the schedule."""

from __future__ import annotations

import pytest

from verifier.harness.faults.spec import build_schedule, parse_spec
from verifier.orchestration.scenario import Profile, parse_scenario, scaled
from verifier.rundata.errors import UsageError

DYNAMIC = """
[workload]
duration_s = 20

[broker]
apply = "dynamic"
at = 5
[broker.settings]
transaction.partition.verification.enable = false
"log.flush.interval.messages" = 1000
"""


def test_start_time_settings_with_dotted_names_written_plainly():
    s = parse_scenario("[broker.settings]\ntransaction.partition.verification.enable = false\n"
                       "transaction.max.timeout.ms = 60000\n", "x")
    assert s.broker.apply == "start" and s.broker.at == 0
    # TOML nests the dotted key; the Kafka name is the dotted path, values are text
    assert s.broker.settings == {"transaction.partition.verification.enable": "false",
                                 "transaction.max.timeout.ms": "60000"}
    assert s.broker_faults() == ()  # start-time settings are not a fault of the schedule
    assert s.to_json()["broker"] == {"apply": "start", "at": 0,
                                     "settings": s.broker.settings}


def test_no_table_no_settings():
    s = parse_scenario("", "x")
    assert s.broker is None and s.broker_faults() == () and "broker" not in s.to_json()


def test_dynamic_table_becomes_a_broker_config_fault_until_the_load_ends():
    s = parse_scenario(DYNAMIC, "x")
    assert s.broker.apply == "dynamic" and s.broker.at == 5.0
    (fault,) = s.broker_faults()
    assert fault == {"kind": "broker-config", "target": {"all": True}, "start": 5.0,
                     "duration": 15.0,
                     "params": {"settings": {"transaction.partition.verification.enable": "false",
                                             "log.flush.interval.messages": "1000"}}}
    spec = parse_spec(fault, "x")
    schedule = build_schedule([spec], seed=1, run_seconds=20)
    assert schedule.faults[0].heal_at == 20.0  # healed (restored) as the load ends


def test_profile_scales_the_dynamic_time_with_the_load():
    s = scaled(parse_scenario(DYNAMIC, "x"), Profile("quick", ("x",), time_scale=0.5))
    assert s.workload.duration_s == 10 and s.broker.at == 2.5
    (fault,) = s.broker_faults()
    assert (fault["start"], fault["duration"]) == (2.5, 7.5)


@pytest.mark.parametrize("text, fragment", [
    ("[broker]\napply = 'later'\nsettings = { a = 1 }", "apply must be one of"),
    ("[broker]\nsettings = {}", "non-empty table"),
    ("[broker]\napply = 'start'", "non-empty table"),
    ("[broker]\nsettings = { a = 1 }\nwhen = 3", "unknown keys"),
    ("[broker]\nsettings = { a = 1 }\nat = 3", "\"dynamic\" only"),
    ("[broker]\napply = 'dynamic'\nsettings = { a = 1 }\nat = 30", "at must be"),
    ("[broker]\napply = 'dynamic'\nsettings = { a = 1 }\nat = -1", "at must be"),
    ("[broker]\napply = 'dynamic'\nsettings = { a = 1 }\nat = true", "at must be"),
    ("[broker.settings]\n'Log Dirs' = 'x'", "not a Kafka setting name"),
    ("[broker.settings]\nlisteners = 'PLAINTEXT://:9092'", "port plan"),
    ("[broker.settings]\nnode.id = 7", "port plan"),
    ("[broker.settings]\na = [1, 2]", "string, number or boolean"),
    ("broker = 3", "expected a table"),
])
def test_bad_broker_tables_are_usage_errors(text, fragment):
    with pytest.raises(UsageError, match=fragment):
        parse_scenario(text, "x")


@pytest.mark.parametrize("entry, fragment", [
    ({"kind": "broker-config", "target": {"node": 1}, "start": 0, "duration": 1,
      "params": {"settings": {"a": "b"}}}, "every broker"),
    ({"kind": "broker-config", "target": {"all": True}, "start": 0, "duration": 1,
      "params": {}}, "params must be"),
    ({"kind": "broker-config", "target": {"all": True}, "start": 0, "duration": 1,
      "params": {"settings": {"a": 1}}}, "string values"),
])
def test_broker_config_fault_specs_are_checked(entry, fragment):
    with pytest.raises(UsageError, match=fragment):
        parse_spec(entry, "x")
