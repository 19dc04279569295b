"""The judge's view of a run's plan (verifier.judge.checks.load.config_of): derived from
the one parser's RunPlan, checked against the expectation table."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifier.judge.checks.load import config_of, load_config
from verifier.rundata.formats import RunFormatError
from verifier.rundata.plan import plan_from_json, read_plan

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs"


def _doc(**over) -> dict:
    return {"format": "run-config", "version": 1, "run": "r", "sink": "exactly-once",
            "producers": {"t-0": {"mode": "transactional", "topic": "r.t"},
                          "c-0": {"mode": "copier", "expect": "transactional",
                                  "topic": "r.c", "input_topic": "r.t"}}, **over}


def test_a_recorded_runs_config_is_its_plan_seen_by_the_judge():
    path = RUNS / "pipeline-restart" / "config.json"
    plan, config = read_plan(path), load_config(path)
    assert config.run == plan.run and config.sink == plan.sink
    assert {p: (s.mode, s.expect, s.topic) for p, s in config.producers.items()} == \
        {p: (s.mode, s.expect, s.topic) for p, s in plan.producers.items()}
    assert set(config.pipelines) == set(plan.pipelines)
    spec = next(iter(config.pipelines.values()))
    assert spec.label.startswith("pipeline:") and spec.expect.startswith("pipeline/")


def test_producers_and_the_copiers_input():
    config = config_of(plan_from_json(_doc()))
    assert config.modes() == ["transactional", "copier"]
    assert config.producers["c-0"].input_topic == "r.t"
    assert config.expect_of("copier") == "transactional"


@pytest.mark.parametrize(("over", "message"), [
    ({"sink": "twice"}, "unknown sink 'twice'"),
    ({"producers": {"x": {"mode": "user:x", "expect": "sometimes", "topic": "t"}}},
     "producer x: unknown mode 'sometimes'"),
    ({"producers": {}}, "empty run: no producers"),
    ({"pipelines": {"p": {"guarantee": "maybe"}}}, "pipeline p: guarantee 'maybe'"),
])
def test_what_the_expectation_table_does_not_know_is_refused(over, message):
    with pytest.raises(RunFormatError, match=message):
        config_of(plan_from_json(_doc(**over)))
