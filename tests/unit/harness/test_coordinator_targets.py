"""A broker fault knows the run's transaction coordinators: a leader target may avoid
them (the pure choice, and the validation of the form), and the fault's line says whether
the broker it acted on was one."""

from __future__ import annotations

import json

import pytest

from verifier.harness.faults.spec import parse_spec
from verifier.harness.faults.targets import (
    TargetError,
    coordinator_detail,
    pick_leader,
    validate_broker_target,
)
from verifier.report.faults import fault_summary
from verifier.rundata.errors import UsageError
from verifier.rundata.layout import RunLayout

#: topic t: partition 0 led by broker 1, 1 by 2, 2 by 3; another topic led by 3
STATES = {("t", 0): {"leader": 1}, ("t", 1): {"leader": 2}, ("t", 2): {"leader": 3},
          ("u", 0): {"leader": 3}}


def test_the_named_partition_is_taken_when_its_leader_coordinates_nothing():
    assert pick_leader(STATES, "t", 0, {"r.tx-0": 2}) == (1, {"partition": 0,
                                                              "avoided": True})


def test_another_partition_is_taken_when_the_named_ones_leader_is_a_coordinator():
    # partition 0's leader (1) coordinates r.tx-0: the lowest other partition whose leader
    # coordinates none (1 is led by 2, which coordinates r.tx-1) is 2, led by 3
    node, chosen = pick_leader(STATES, "t", 0, {"r.tx-0": 1, "r.tx-1": 2})
    assert (node, chosen) == (3, {"partition": 2, "avoided": True})


def test_without_a_partition_the_lowest_one_whose_leader_is_no_coordinator():
    assert pick_leader(STATES, "t", None, {"r.tx-0": 1})[0] == 2


def test_every_leader_a_coordinator_is_said_not_silently_taken():
    node, chosen = pick_leader(STATES, "t", 1, {"a": 1, "b": 2, "c": 3, "d": None})
    assert node == 2 and chosen["partition"] == 1 and chosen["avoided"] is False
    assert "every leader of t (1, 2, 3) coordinates" in chosen["why"]
    assert "the coordinator of d is not known" in chosen["why"]


def test_a_topic_without_a_leader_is_a_target_error():
    with pytest.raises(TargetError, match="no partition of t has a leader"):
        pick_leader({("t", 0): {"leader": -1}}, "t", 0, {})


def test_the_detail_names_each_coordinator_and_those_of_the_target():
    detail = coordinator_detail(2, {"r.tx-1": 2, "r.tx-0": 1, "r.tx-2": None},
                                {"r.tx-0": "tx-0", "r.tx-1": "tx-1", "r.tx-2": "tx-2"})
    assert detail == {"coordinators": {"r.tx-0": {"pid": "tx-0", "node": 1},
                                       "r.tx-1": {"pid": "tx-1", "node": 2},
                                       "r.tx-2": {"pid": "tx-2", "node": None}},
                      "coordinator_of": ["r.tx-1"]}
    assert coordinator_detail(2, {}, {}) == {}  # a run without transactional ids


@pytest.mark.parametrize("value, message", [
    ({"topic": "t", "avoid": "coordinator"}, "avoid must be one of"),
    ({"topic": "t", "avoid": True}, "avoid must be one of"),
    ({"topic": "t"}, "needs a partition"),
    ({"topic": "t", "partition": "0", "avoid": "coordinators"}, "partition must be"),
    ({"topic": "t", "partition": -1}, "partition must be"),
    ({"topic": "t", "partition": True}, "partition must be"),
    ({"topic": "t", "partition": 0, "avoids": "coordinators"}, "unknown field"),
    ({"partition": 0, "avoid": "coordinators"}, "needs {topic"),
    ("t-0", "needs {topic"),
])
def test_a_bad_leader_target_is_a_clear_usage_error(value, message):
    with pytest.raises(UsageError, match=message):
        validate_broker_target({"leader": value}, [1, 2, 3], allow_all=False)


@pytest.mark.parametrize("value", [
    {"topic": "t", "partition": 0},
    {"topic": "t", "avoid": "coordinators"},
    {"topic": "t", "partition": 2, "avoid": "coordinators"},
])
def test_the_leader_forms_pass_validation_as_a_scenario_spec(value):
    spec = parse_spec({"kind": "broker-kill", "target": {"leader": value}, "start": 1,
                       "duration": 2}, "scenario fault 1", [1, 2, 3])
    assert spec.target == {"leader": value}


def _line(tmp_path, detail: dict) -> str:
    path = RunLayout(tmp_path).nemesis
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"fault": "broker-kill", "id": 1,
            "target": {"leader": {"topic": "t", "partition": 0, "avoid": "coordinators"}}}
    ops = [{"type": "header", "format": "nemesis-history", "version": 1, "run": "r"},
           {"type": "ok", "f": "start", **base, "t": 1, "detail": detail}]
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    (line,) = fault_summary(tmp_path)
    return line


def test_the_fault_line_says_the_broker_was_a_coordinator(tmp_path):
    line = _line(tmp_path, {"node": 1, **coordinator_detail(1, {"r.tx-0": 1},
                                                               {"r.tx-0": "tx-0"}),
                            "partition": 0, "avoided": False, "why": "every leader..."})
    assert line == ("broker-kill on broker 1: fired; could not avoid the transaction "
                    "coordinators: every leader...; the transaction coordinator of r.tx-0")


def test_the_fault_line_says_the_broker_was_none_and_which_partition(tmp_path):
    line = _line(tmp_path, {"node": 3, **coordinator_detail(3, {"r.tx-0": 1},
                                                               {"r.tx-0": "tx-0"}),
                            "partition": 2, "avoided": True})
    assert line == ("broker-kill on broker 3: fired; partition 2's leader, chosen to avoid "
                    "the transaction coordinators; not a transaction coordinator (r.tx-0 "
                    "on broker 1)")
