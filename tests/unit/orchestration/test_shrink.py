"""Shrinking on a fake runner (issue 35): the fingerprint, the re-run rule, the candidate
order, the cache, ddmin, the budget; and the scenario file the result is written as."""

from __future__ import annotations

import copy
import json

import pytest

from verifier.api import ChaosRequest, request_from_plan
from verifier.orchestration.scenario import load_scenario, parse_scenario
from verifier.orchestration.shrink import Shrinker
from verifier.orchestration.shrink_plan import load_failed_run, scenario_toml
from verifier.orchestration.shrink_result import (
    Fingerprint,
    Observed,
    Result,
    fingerprints_of,
    reruns_needed,
)
from verifier.orchestration.shrink_specs import with_faults
from verifier.rundata.errors import UsageError
from verifier.rundata.plan import PlannedProducer, RunPlan

FP = Fingerprint("pipeline:foreach-batch", "duplicate-delivery")


def _fault(kind, start=5.0, duration=8.0):
    return {"kind": kind, "target": {"all": True}, "start": start, "duration": duration}


def _spec(faults, **workload):
    w = {"modes": ["at-most-once", "at-least-once", "idempotent", "transactional"],
         "partitions": 3, "record_size": 100, "rate": 40.0, "duration_s": 60.0,
         "txn_size": 10, "abort_fraction": 0.2, **workload}
    return {"name": "planted", "description": "", "workload": w, "faults": faults,
            "sink": "exactly-once", "drain_timeout_s": 120.0, "connections": {},
            "clients": {}}


class FakeRunner:
    """A run as a pure function of the spec: ``fails(spec)`` says whether it FAILs the
    same way; every call is recorded; each run takes ``seconds`` of the fake clock."""

    def __init__(self, fails, seconds=60.0, other=frozenset()):
        self.fails, self.seconds, self.other = fails, seconds, other
        self.calls: list[tuple[str, dict]] = []
        self.now = 0.0

    def clock(self):
        return self.now

    def __call__(self, spec, label):
        self.calls.append((label, spec))
        self.now += self.seconds
        fps = frozenset({FP}) if self.fails(spec, len(self.calls)) else frozenset()
        return Observed(fps | self.other, self.seconds, verdict="FAIL" if fps else "PASS")


def _kinds(spec):
    return [f["kind"] for f in spec["faults"]]


def _shrinker(runner, spec, **kw):
    kw.setdefault("budget_s", 10_000.0)
    return Shrinker(spec, FP, runner, est_run_s=runner.seconds, clock=runner.clock,
                    say=lambda _line: None, **kw)


def test_the_fingerprint_is_a_failed_columns_forbidden_kinds():
    doc = {"columns": [
        {"name": "pipeline:foreach-batch", "verdict": "FAIL", "forbidden": ["duplicate-delivery"]},
        {"name": "at-most-once", "verdict": "PASS", "forbidden": []},
        {"name": "idempotent", "verdict": "UNKNOWN", "forbidden": ["lost"]},
    ]}
    assert fingerprints_of(doc) == {FP}
    other_kind = {"columns": [{"name": FP.column, "verdict": "FAIL", "forbidden": ["lost"]}]}
    assert FP not in fingerprints_of(other_kind)


@pytest.mark.parametrize("rate,k", [(1.0, 2), (0.9, 2), (0.7, 3), (0.5, 5), (0.3, 9)])
def test_the_rerun_rule_follows_the_measured_rate(rate, k):
    assert reruns_needed(rate) == k


def test_one_at_a_time_keeps_only_the_fault_that_breaks_it():
    runner = FakeRunner(lambda spec, _n: "process-kill" in _kinds(spec))
    spec = _spec([_fault("ack-loss"), _fault("process-kill"), _fault("broker-pause")])
    result = _shrinker(runner, spec, calibrate=2, confirm=1).shrink()
    assert _kinds(result.best) == ["process-kill"]
    labels = [t.label for t in result.trials]
    # the order: drop faults first, then durations, workload, earlier, shorter
    assert labels[:3] == ["drop fault ack-loss[all=True]", "drop fault process-kill[all=True]",
                          "drop fault broker-pause[all=True]"]
    first = {kind: next(i for i, x in enumerate(labels) if x.startswith(kind))
             for kind in ("drop", "halve", "modes", "partitions", "rate", "faults earlier",
                          "load")}
    assert list(first) == sorted(first, key=first.get)
    outcome = {t.label: t.outcome for t in result.trials}
    assert outcome["drop fault process-kill[all=True]"] == "passes"
    # calibrated 2/2 -> the rule asks 2 clean runs before the kill counts as needed
    (kill,) = [t for t in result.trials if t.label.startswith("drop fault process")]
    assert len(kill.runs) == 2
    assert result.stopped == "done" and result.confirmed_rate() == (1, 1)


def test_a_candidate_fails_at_its_first_reproducing_run():
    # reproduces on every second run: the candidate's first run is clean, the second not
    runner = FakeRunner(lambda spec, n: n % 2 == 0 or len(spec["faults"]) == 2)
    spec = _spec([_fault("ack-loss"), _fault("process-kill")])
    s = _shrinker(runner, spec, calibrate=2, confirm=1)
    s.rate, s.reruns = 0.5, 5
    assert s.try_candidate("drop", _spec([_fault("process-kill")])) is True
    assert len(s.trials[-1].runs) == 2  # stopped at the first failure, not all five


def test_tried_candidates_are_cached():
    runner = FakeRunner(lambda spec, _n: True)
    s = _shrinker(runner, _spec([_fault("ack-loss")]))
    candidate = _spec([])
    assert s.try_candidate("first", candidate) is True
    n = len(runner.calls)
    assert s.try_candidate("same again", copy.deepcopy(candidate)) is True
    assert len(runner.calls) == n and s.trials[-1].outcome == "cached"


def test_a_failure_of_another_column_or_kind_does_not_count():
    other = frozenset({Fingerprint("at-least-once", "lost"),
                       Fingerprint(FP.column, "lost")})
    runner = FakeRunner(lambda spec, _n: len(spec["faults"]) == 2, other=other)
    spec = _spec([_fault("ack-loss"), _fault("process-kill")])
    result = _shrinker(runner, spec, calibrate=1, confirm=1).shrink()
    assert len(result.best["faults"]) == 2


def test_ddmin_finds_the_two_faults_among_many():
    faults = [_fault(f"f{i}") for i in range(12)]
    runner = FakeRunner(lambda spec, _n: {"f3", "f9"} <= set(_kinds(spec)))
    s = _shrinker(runner, _spec(faults), calibrate=1, confirm=1)
    s.rate, s.reruns = 1.0, 1
    s._drop_faults()
    assert _kinds(s.best) == ["f3", "f9"]
    faults = [_fault(f"f{i}") for i in range(32)]
    runner = FakeRunner(lambda spec, _n: "f21" in _kinds(spec))
    s = _shrinker(runner, _spec(faults), calibrate=1, confirm=1)
    s.rate, s.reruns = 1.0, 1
    s._drop_faults()
    assert _kinds(s.best) == ["f21"]
    assert len(runner.calls) <= 12  # halving: about 2 log2(32), not 32 one at a time


def test_too_rare_a_fail_is_reported_with_its_rate_not_shrunk():
    runner = FakeRunner(lambda spec, n: n == 1)  # 1 of 4 calibration runs
    result = _shrinker(runner, _spec([_fault("ack-loss")]), calibrate=4).shrink()
    assert result.stopped == "too-rare" and result.rate == 0.25
    assert len(runner.calls) == 4 and not result.trials


def test_a_cut_budget_keeps_the_best_so_far_and_confirms_it():
    runner = FakeRunner(lambda spec, _n: "process-kill" in _kinds(spec))
    spec = _spec([_fault("ack-loss"), _fault("broker-pause"), _fault("process-kill")])
    # 60 s a run: calibrate 1, drop ack-loss (kept), then only the reserve for 1 confirm
    # and one step of the walk back
    result = _shrinker(runner, spec, calibrate=1, confirm=1, budget_s=4.5 * 60).shrink()
    assert result.stopped == "budget"
    assert _kinds(result.best) == ["broker-pause", "process-kill"]
    assert len(result.confirmation) == 1 and result.confirmed_rate() == (1, 1)
    assert runner.now <= 3 * 60 and not result.walk_back


def _flaky(reliable):
    """A runner whose candidates FAIL at their first run only, except those
    ``reliable(spec)`` says FAIL every time (a step kept by luck, as a lower rate that
    meets a hold's window once and not again)."""
    seen: dict[str, int] = {}

    def fails(spec, _n):
        key = json.dumps(spec, sort_keys=True)
        seen[key] = seen.get(key, 0) + 1
        return bool(spec["faults"]) and (reliable(spec) or seen[key] == 1)
    return FakeRunner(fails)


def test_a_result_that_does_not_reproduce_is_walked_back_to_a_step_that_does():
    # reliable at 40 records/s; every lower rate FAILed once (kept) and never again
    runner = _flaky(lambda spec: spec["workload"]["rate"] >= 40.0)
    result = _shrinker(runner, _spec([_fault("hold")]), calibrate=1, confirm=1).shrink()
    assert result.confirmation and not any(FP in o.fingerprints
                                           for o in result.confirmation)
    assert result.best["workload"]["rate"] == 40.0
    assert result.best["workload"]["partitions"] == 1  # kept: it reproduced
    assert result.undone[0] == "rate 40 -> 20 records/s" and len(result.undone) >= 3
    assert not set(result.undone) & set(result.accepted)
    assert [t.outcome for t in result.walk_back][-1] == "confirmed"
    assert all(t.outcome == "not confirmed" for t in result.walk_back[:-1])
    assert result.shrunk and result.confirmed_rate() == (1, 1)
    assert result.runs == len(runner.calls)


def test_the_walk_back_keeps_the_original_when_no_step_reproduces(tmp_path):
    from verifier.orchestration.shrink_plan import FailedRun
    from verifier.orchestration.shrink_runner import write_outputs

    runner = _flaky(lambda spec: False)  # every candidate FAILs once, never again
    spec = _spec([_fault("hold")])
    result = _shrinker(runner, spec, calibrate=1, confirm=1).shrink()
    assert not result.accepted and result.undone
    assert result.best == spec and not result.shrunk
    assert result.confirmed_rate() == (1, 1)  # the original's calibration
    assert result.walk_back and all(t.outcome == "not confirmed" for t in result.walk_back)
    paths = write_outputs(result, FailedRun(tmp_path, _plan(), {}, FP, ()), tmp_path, "cmd")
    report = paths["report"].read_text()
    assert "## Undone" in report and f"- {result.undone[0]}\n" in report
    assert "(the original, kept by the walk back: calibration)" in report
    assert "- nothing\n" in report.split("## Removed")[1].split("##")[0]


def test_a_budget_spent_in_the_walk_back_keeps_the_original():
    runner = _flaky(lambda spec: spec["faults"][0]["duration"] >= 8.0)
    spec = _spec([_fault("hold")], modes=["idempotent"], partitions=1)
    # 60 s a run: calibrate, drop hold (2 clean), halve 8 -> 4, 4 -> 2, 2 -> 1 (kept by
    # luck), the budget; confirm (no), one step of the walk back (no), the budget again
    result = _shrinker(runner, spec, calibrate=1, confirm=1, budget_s=500).shrink()
    assert result.stopped == "budget"
    assert len(result.walk_back) == 1 and result.walk_back[0].outcome == "not confirmed"
    assert result.best == spec and len(result.undone) == 3 and not result.accepted
    assert runner.now <= 500


def test_workload_goes_down_to_the_columns_mode_then_earlier_and_shorter():
    runner = FakeRunner(lambda spec, _n: True)
    spec = _spec([_fault("process-kill", start=[16.0, 20.0], duration=3.0)])
    s = _shrinker(runner, spec, calibrate=1, confirm=1, column_modes=("idempotent",))
    result = s.shrink()
    w = result.best["workload"]
    assert w["modes"] == ["idempotent"] and w["partitions"] == 1 and w["rate"] == 10.0
    assert result.best["faults"] == []  # the fake fails without any fault: all dropped
    spec = _spec([_fault("process-kill", start=[16.0, 20.0], duration=3.0)])
    keep = FakeRunner(lambda spec, _n: bool(spec["faults"]))
    best = _shrinker(keep, spec, calibrate=1, confirm=1).shrink().best
    assert best["faults"][0]["start"] == [2.0, 2.5]  # halved while the first is >= 2 s
    assert best["faults"][0]["duration"] == 1.5
    assert best["workload"]["duration_s"] < 60.0


def test_the_scenario_file_parses_back_to_the_same_scenario():
    for name in ("combined", "pipeline-restart", "idle-connections", "late-produce"):
        s = load_scenario(name)
        again = parse_scenario(scenario_toml(s.to_json(), ["a header", "run it: x"]), s.name)
        assert again.to_json() == s.to_json(), name


def _plan(producers=(), environment="local", **extra) -> RunPlan:
    """A run's plan as config.json holds it: ``producers`` (pid, client, config file)."""
    return RunPlan(run="planted-1", scenario="planted", seed=4, sink="exactly-once",
                   bootstrap_servers="127.0.0.1:9701", environment=environment,
                   producers={pid: PlannedProducer(pid=pid, mode=pid.rsplit("-", 1)[0],
                                                   expect="idempotent", topic=f"t.{pid}",
                                                   client=client, config_file=config_file)
                              for pid, client, config_file in producers},
                   extra=extra)


def _run_dir(tmp_path, columns):
    _plan([("idempotent-0", "kafka-python", None)], scenario_spec=_spec([_fault("ack-loss")]),
          kafka_version="4.1.1").write(tmp_path / "config.json")
    (tmp_path / "verdict.json").write_text(json.dumps({"format": "verdict", "columns": columns}))
    return tmp_path


def test_only_a_failed_column_of_a_run_folder_can_be_shrunk(tmp_path):
    cols = [{"name": "idempotent", "mode": "idempotent", "verdict": "FAIL",
             "forbidden": ["lost", "reorder"]},
            {"name": "at-most-once", "mode": "at-most-once", "verdict": "PASS", "forbidden": []}]
    run = _run_dir(tmp_path, cols)
    failed = load_failed_run(run)
    assert failed.fingerprint == Fingerprint("idempotent", "lost")
    assert failed.column_modes == ("idempotent",)
    assert load_failed_run(run, kind="reorder").fingerprint.kind == "reorder"
    for column, kind, said in [("nope", None, "unknown column 'nope'"),
                               ("at-most-once", None, "did not FAIL"),
                               ("idempotent", "torn-transaction", "did not show")]:
        with pytest.raises(UsageError, match=said):
            load_failed_run(run, column, kind)
    cols[0]["verdict"] = "PASS"
    _run_dir(tmp_path, cols)
    with pytest.raises(UsageError, match="did not FAIL"):
        load_failed_run(run)
    with pytest.raises(UsageError, match="not a finished run folder"):
        load_failed_run(tmp_path / "histories" if (tmp_path / "histories").mkdir() is None
                        else tmp_path)


def test_the_chaos_request_runs_the_scenario_as_the_run_did(tmp_path):
    from verifier.cli import build_parser
    from verifier.cli.chaos import request_of

    pipelines = {"foreach-batch": {"spec": "foreach-batch", "guarantee": "exactly-once"}}
    plan = _plan([("a-0", "java", None), ("b-0", "java", None)], kafka_version="3.6.2",
                 pipelines=pipelines)
    where = {"out": tmp_path / "runs", "base_port": 9800, "state_dir": tmp_path / "state"}
    request = request_from_plan(plan, "shrunk.toml", **where)
    assert request == ChaosRequest(scenarios=("shrunk.toml",), seed=4, client="java",
                                   pipeline="foreach-batch",
                                   pipeline_guarantee="exactly-once", kafka_version="3.6.2",
                                   **where)
    argv = request.argv()
    assert argv == ["--scenario", "shrunk.toml", "--seed", "4", "--client", "java",
                    "--pipeline", "foreach-batch", "--pipeline-guarantee", "exactly-once",
                    "--kafka-version", "3.6.2"]
    # the chaos command takes it as it is, and means the very same request
    args = build_parser().parse_args(["chaos", *argv, "--out", str(where["out"]),
                                      "--base-port", "9800", "--state-dir",
                                      str(where["state_dir"])])
    assert request_of(args) == request


def test_the_chaos_request_keeps_clients_user_config_and_cluster(tmp_path):
    from verifier.cli import build_parser
    from verifier.cli.chaos import request_of

    props = tmp_path / "app.properties"
    props.write_text("acks=all\n")
    cases = [
        (_plan([("idempotent-0", "kafka-python", None), ("idempotent-java-0", "java", None),
                ("user-0", "java", str(props))], environment="external"),
         ["--clients", "kafka-python,java", "--producer-config", str(props),
          "--bootstrap-servers", "127.0.0.1:9701"]),
        (_plan([("user-0", "librdkafka", str(props))], environment="docker"),
         ["--client", "librdkafka", "--producer-config", str(props), "--environment",
          "docker"]),
    ]
    for plan, flags in cases:
        request = request_from_plan(plan, "s.toml")
        assert request.argv() == ["--scenario", "s.toml", "--seed", "4", *flags]
        assert request_of(build_parser().parse_args(["chaos", *request.argv()])) == request
    props.unlink()
    with pytest.raises(UsageError, match="producer config .* is gone"):
        request_from_plan(cases[0][0], "s.toml")


def test_the_command_refuses_what_it_cannot_shrink_with_exit_64(tmp_path, capsys):
    from verifier.cli import EXIT_USAGE, main

    cols = [{"name": "idempotent", "mode": "idempotent", "verdict": "PASS", "forbidden": []}]
    run = _run_dir(tmp_path / "run", cols) if (tmp_path / "run").mkdir() is None else None
    cases = [([str(tmp_path / "missing")], "is not a folder"),
             ([str(run)], "did not FAIL"),
             ([str(run), "--column", "nope"], "unknown column 'nope'"),
             ([str(run), "--budget", "soon"], "duration 'soon'")]
    for argv, said in cases:
        assert main(["shrink", *argv]) == EXIT_USAGE, argv
        assert said in capsys.readouterr().err, argv
    with pytest.raises(SystemExit) as exc:
        main(["shrink", str(run), "--calibrate", "0"])
    assert exc.value.code == EXIT_USAGE
    matrix = tmp_path / "matrix"
    matrix.mkdir()
    (matrix / "verdict.json").write_text(json.dumps(
        {"grid": {}, "runs": [{"exit_code": 1, "run_dir": "runs/x/20261127T000000Z"}]}))
    assert main(["shrink", str(matrix)]) == EXIT_USAGE
    assert "its FAILed runs: runs/x/20261127T000000Z" in capsys.readouterr().err


def test_the_runner_runs_each_candidate_as_a_scenario_file_and_reads_its_verdict(
        tmp_path, monkeypatch):
    import io

    from verifier.orchestration import shrink_runner
    from verifier.orchestration.planning import RunOptions
    from verifier.orchestration.shrink_plan import FailedRun
    from verifier.orchestration.shrink_runner import ChaosRunner, write_outputs

    seen = []

    def fake_run_one(env, scenario, opts, spark, out):
        seen.append((scenario, opts.out))
        return {"run_dir": str(opts.out / "x"), "columns": [
            {"name": FP.column, "verdict": "FAIL", "forbidden": [FP.kind]}]}

    monkeypatch.setattr(shrink_runner, "run_one", fake_run_one)
    monkeypatch.setattr(shrink_runner, "validate_scenario", lambda *_a: [])
    spec = load_scenario("pipeline-restart").to_json()
    runner = ChaosRunner(None, RunOptions(out=tmp_path), None, tmp_path, "planted", FP.column,
                         io.StringIO())
    obs = runner(spec, "drop fault x")
    assert obs.fingerprints == {FP} and obs.verdict == "FAIL"
    scenario, out = seen[0]
    assert scenario.to_json() == {**spec, "name": "planted"}
    assert out == tmp_path / "runs" / "01"
    assert (tmp_path / "candidates" / "01.toml").read_text().startswith("# drop fault x")

    best = with_faults(spec, spec["faults"][:1])
    result = Result(spec, best, FP, [obs], 1.0, 2, [], [obs], "done", 600.0)
    failed = FailedRun(tmp_path, _plan(), {}, FP, ())
    command = "verifier chaos --scenario shrunk.toml --seed 3 --pipeline foreach-batch"
    paths = write_outputs(result, failed, tmp_path, command)
    text = paths["scenario"].read_text()
    assert f"# run it: {command}\n" in text
    assert f"- run it: `{command}`" in paths["report"].read_text()
    assert "reproduces: 1/1 runs (confirmation)" in text
    assert len(parse_scenario(text, "shrunk").faults) == 1
    report = paths["report"].read_text()
    assert "- before: 2 faults, 90 s" in report and "- after: 1 fault, 90 s" in report


def test_the_chaos_request_runs_the_applications_again_as_they_ran(tmp_path):
    from verifier.cli import build_parser
    from verifier.cli.chaos import request_of

    def entry(preset, protocol=None, instances=2, command=("python", "x.py"),
              guarantee="exactly-once"):
        return {"command": list(command), "guarantee": guarantee, "instances": instances,
                "preset": preset, "group_protocol": protocol}

    presets = {"streams-eos": entry("streams-exactly-once-v2"),
               "java-copier-transactional[classic]": entry("java-copier-transactional",
                                                           "classic", 3),
               "java-copier-transactional[consumer]": entry("java-copier-transactional",
                                                            "consumer", 3)}
    command = {"user": entry(None, command=("java", "-cp", "my app/*", "example.Service"),
                             guarantee="at-least-once")}
    cases = [(presets, ["--app", "streams-eos,java-copier-transactional",
                        "--app-instances", "3", "--group-protocol", "classic,consumer"]),
             (command, ["--app", "java -cp 'my app/*' example.Service",
                        "--app-guarantee", "at-least-once"])]
    for apps, flags in cases:
        request = request_from_plan(_plan([("idempotent-0", "kafka-python", None)],
                                          apps=apps), "s.toml")
        assert request.argv() == ["--scenario", "s.toml", "--seed", "4", *flags]
        assert request_of(build_parser().parse_args(["chaos", *request.argv()])) == request
