"""The copier column: a kafka-python copier reading the topic of the mode before it,
judged as a transactional producer, named in fault targets as ``@copier`` only."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifier.orchestration.planning import RunOptions, _resolve_faults, plan_producers
from verifier.orchestration.scenario import parse_scenario
from verifier.rundata.errors import UsageError
from verifier.rundata.plan import RunPlan, read_plan

SCENARIO = """
[workload]
modes = ["idempotent", "transactional", "copier"]
[[faults]]
kind = "hold"
target = { all = true }
start = 1
duration = 2
params = { api_keys = [28], transactional_id = "@copier", release_after_ms = 500 }
[[faults]]
kind = "hold"
target = { all = true }
start = 1
duration = 2
params = { api_keys = [26], transactional_id = "@transactional", release_after_ms = 500 }
"""


class _Env:
    def skipped_kinds(self):
        return set()


def test_the_copier_reads_the_topic_of_the_mode_before_it():
    plans = plan_producers(parse_scenario(SCENARIO, "s"), "run", RunOptions(out=Path(".")))
    copier = plans[-1]
    assert (copier.pid, copier.mode, copier.expect, copier.topic, copier.input_topic) == (
        "copier-0", "copier", "transactional", "run.copier", "run.transactional")
    assert copier.to_json()["input_topic"] == "run.transactional"


def test_copier_and_transactional_holds_name_their_own_producer():
    scenario = parse_scenario(SCENARIO, "s")
    plans = plan_producers(scenario, "run", RunOptions(out=Path(".")))
    specs, _ = _resolve_faults(scenario, plans, "run", _Env(),
                               {p.process_name for p in plans} | {"observer"})
    assert [s.params["transactional_id"] for s in specs] == ["run.copier-0",
                                                             "run.transactional-0"]


def test_side_by_side_only_kafka_python_runs_a_copier():
    scenario = parse_scenario(SCENARIO, "s")
    plans = plan_producers(scenario, "run", RunOptions(out=Path("."),
                                                       clients=("kafka-python", "java")))
    copiers = [p for p in plans if p.input_topic]
    assert [(p.mode, p.input_topic) for p in copiers] == [
        ("copier/kafka-python", "run.transactional.kafka-python")]
    specs, _ = _resolve_faults(scenario, plans, "run", _Env(),
                               {p.process_name for p in plans} | {"observer"})
    assert specs[0].params["transactional_id"] == "run.copier-kafka-python-0"


def test_the_plan_carries_the_input_topic_to_the_generator(tmp_path):
    plans = plan_producers(parse_scenario(SCENARIO, "s"), "run", RunOptions(out=tmp_path))
    RunPlan(run="run", scenario="s", seed=1, sink="exactly-once", bootstrap_servers="b:1",
            producers={p.pid: p for p in plans}).write(tmp_path / "config.json")
    assert read_plan(tmp_path / "config.json").producer("copier-0").input_topic == \
        "run.transactional"


def test_a_copier_needs_a_mode_before_it():
    with pytest.raises(UsageError, match="listed before"):
        parse_scenario('[workload]\nmodes = ["copier", "idempotent"]\n', "s")


ERROR_ANSWER = """
[workload]
modes = ["at-least-once", "transactional"]
[[faults]]
kind = "error-answer"
target = { all = true }
start = 1
duration = 2
[faults.params]
api = "end-txn"
error = "COORDINATOR_LOAD_IN_PROGRESS"
variant = "refuse"
next = 1
transactional_id = "@transactional"
"""


def test_an_error_answer_names_a_mode_s_transactional_id_and_kafka_s_error_names():
    """``"@transactional"``: the generator's real transactional id, one fault per client;
    an error name Kafka does not have is a usage error (exit 64) before anything starts."""
    scenario = parse_scenario(ERROR_ANSWER, "s")
    plans = plan_producers(scenario, "run", RunOptions(out=Path("."),
                                                       clients=("kafka-python", "java")))
    processes = {p.process_name for p in plans} | {"observer"}
    specs, _ = _resolve_faults(scenario, plans, "run", _Env(), processes)
    assert sorted(s.params["transactional_id"] for s in specs) == [
        "run.transactional-java-0", "run.transactional-kafka-python-0"]
    bad = parse_scenario(ERROR_ANSWER.replace("COORDINATOR_LOAD_IN_PROGRESS", "LOADING"), "s")
    with pytest.raises(UsageError, match="Kafka's error names") as exc:
        _resolve_faults(bad, plans, "run", _Env(), processes)
    assert exc.value.exit_code == 64
