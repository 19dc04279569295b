"""`chaos --repeat N` in the matrix: each scenario runs N times in a row with the seeds
SEED..SEED+N-1, each run knows its place, the combined verdict.json holds every outcome,
and the exit code follows the worst (issue 38). The runs themselves are stood in for by
recorded documents (tests/unit/report/fixtures/matrix.json); no Kafka, no Spark."""

from __future__ import annotations

import copy
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

import verifier.orchestration.chaos as chaos
from verifier.orchestration.chaos import planned_runs, repeat_seeds, run_matrix
from verifier.orchestration.planning import RunOptions
from verifier.orchestration.scenario import load_scenario
from verifier.rundata.formats import read_json

FIXTURE = Path(__file__).parents[1] / "report" / "fixtures" / "matrix.json"


def test_seeds_are_consecutive_from_the_given_one_and_the_same_each_time():
    assert repeat_seeds(1, 3) == [1, 2, 3]
    assert repeat_seeds(40, 2) == [40, 41]
    assert repeat_seeds(7, 1) == [7]  # one run: the seed as given
    assert repeat_seeds(5, 4) == repeat_seeds(5, 4)


def test_each_scenario_runs_n_times_in_a_row_knowing_its_place(tmp_path):
    a, b = load_scenario("baseline"), load_scenario("ack-loss")
    opts = RunOptions(out=tmp_path, seed=10, repeat=2)
    runs = planned_runs([a, b], opts)
    assert [(s.name, o.seed, o.repetition) for s, o in runs] == [
        ("baseline", 10, (1, 2)), ("baseline", 11, (2, 2)),
        ("ack-loss", 10, (1, 2)), ("ack-loss", 11, (2, 2))]
    once = RunOptions(out=tmp_path, seed=10)
    assert [(s.name, o) for s, o in planned_runs([a, b], once)] == [("baseline", once),
                                                                    ("ack-loss", once)]


class _Env:
    name = "stand-in"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture()
def stand_in(monkeypatch, tmp_path):
    """run_one replaced by the recorded baseline run; ``fail_on`` is the set of seeds whose
    run's idempotent column FAILs. Returns the (scenario, seed, repetition) of each call."""
    recorded = next(d for d in json.loads(FIXTURE.read_text())["runs"]
                    if d["scenario"] == "baseline")
    calls: list[tuple] = []
    fail_on: set[int] = set()

    def run_one(env, scenario, opts, spark, out, advice=None):
        calls.append((scenario.name, opts.seed, opts.repetition))
        doc = copy.deepcopy(recorded)
        doc["scenario"] = scenario.name
        doc["run"] = f"{scenario.name}-s{opts.seed}"
        doc["run_dir"] = str(tmp_path / scenario.name / f"rep{opts.repetition}")
        if opts.repetition:  # as the real run_one records it
            doc["repetition"] = {"index": opts.repetition[0], "of": opts.repetition[1],
                                 "seed": opts.seed}
        if opts.seed in fail_on:
            col = next(c for c in doc["columns"] if c["name"] == "idempotent")
            col["verdict"], col["forbidden"] = "FAIL", ["reorder"]
            doc["exit_code"] = 1
        return doc

    monkeypatch.setattr(chaos, "run_one", run_one)
    return calls, fail_on


def test_the_matrix_holds_every_outcome_and_exits_with_the_worst(stand_in, tmp_path):
    calls, fail_on = stand_in
    fail_on.add(6)
    opts = RunOptions(out=tmp_path / "out", seed=5, repeat=3, profile="quick")
    out = io.StringIO()
    assert run_matrix(_Env(), [load_scenario("baseline")], opts, None, out) == 1
    assert calls == [("baseline", 5, (1, 3)), ("baseline", 6, (2, 3)), ("baseline", 7, (3, 3))]
    matrix = read_json(tmp_path / "out" / "verdict.json", "chaos-matrix")
    assert matrix["repeat"] == 3 and matrix["seeds"] == [5, 6, 7]
    assert matrix["grid"]["outcomes"]["baseline"]["idempotent"] == ["PASS", "FAIL", "PASS"]
    assert matrix["grid"]["grid"]["baseline"]["idempotent"] == "FAIL"
    assert [r["repetition"]["seed"] for r in matrix["runs"]] == [5, 6, 7]
    text = out.getvalue()
    assert "FAIL 1/3 · PASS 2/3" in text and "PASS 3/3" in text
    assert "baseline #1 " in text and "baseline #3 " in text  # the wall time of each run
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert junit.count("<testsuite ") == 1 and 'value="FAIL 1/3 · PASS 2/3"' in junit
    assert "FAIL 1/3 · PASS 2/3" in (tmp_path / "out" / "report.html").read_text()


def test_one_run_per_scenario_shows_the_cells_as_before(stand_in, tmp_path):
    calls, _ = stand_in
    opts = RunOptions(out=tmp_path / "out", seed=5, profile="quick")
    out = io.StringIO()
    assert run_matrix(_Env(), [load_scenario("baseline")], opts, None, out) == 0
    assert calls == [("baseline", 5, None)]
    matrix = read_json(tmp_path / "out" / "verdict.json", "chaos-matrix")
    assert "repeat" not in matrix and "repetition" not in matrix["runs"][0]
    assert "1/1" not in out.getvalue()


def test_fail_fast_stops_at_the_failing_run(stand_in, tmp_path):
    calls, fail_on = stand_in
    fail_on.add(2)
    opts = replace(RunOptions(out=tmp_path / "out", seed=1, repeat=3), fail_fast=True)
    out = io.StringIO()
    assert run_matrix(_Env(), [load_scenario("baseline"), load_scenario("ack-loss")], opts,
                      None, out) == 1
    assert [c[1:] for c in calls] == [(1, (1, 3)), (2, (2, 3))]
    assert "--fail-fast: baseline #2 failed; not run: baseline #3, ack-loss #1" in out.getvalue()
