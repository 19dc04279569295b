"""`verifier explore`'s loop, ledger and report (docs/explore.md): bounded by its budget,
resumable from its folder, duplicates merged, known bugs named, the exit code. The runs
are a fake of `run_one` (a function returning a verdict document: no cluster here; the
whole command is the chaos tier's tests/chaos/test_explore.py) and of the shrink."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from verifier.cli import main
from verifier.orchestration.explore import session
from verifier.orchestration.explore.ledger import Ledger, coverage, exposed, trial_record
from verifier.orchestration.explore.session import ExploreJob, explore
from verifier.orchestration.explore.space import key_of, plan
from verifier.orchestration.planning import RunOptions
from verifier.rundata.errors import UsageError

#: the trial the fake cluster "fails": KAFKA-14402's cell
BUGGY = "produce-held-abort-marker"


class FakeRuns:
    """``run_one``'s stand-in: each run takes 60 s of a fake clock; the buggy trial's
    read_committed column FAILs with duplicates (its hold acted), the others PASS."""

    def __init__(self) -> None:
        self.now = 0.0
        self.ran: list[str] = []

    def clock(self) -> float:
        return self.now

    def run_one(self, env, scenario, opts, spark, out=None) -> dict:
        self.now += 60
        key = scenario.name.removeprefix("explore-")
        self.ran.append(key)
        fail = key.split("+")[0] == BUGGY or BUGGY in key.split("+")
        col = {"name": "transactional@read_committed", "mode": "transactional",
               "verdict": "FAIL" if fail else "PASS",
               "forbidden": ["duplicate-same-session"] if fail else [],
               "exposure": {"faults": [{"fault": "hold", "acted": 3}]}}
        return {"columns": [col], "run_dir": f"/runs/{key}/{len(self.ran)}"}

    def shrink(self, run_dir, column, kind, out, budget_s, env, opts, spark, log, command,
               say):
        self.now += 120
        out.mkdir(parents=True, exist_ok=True)
        (out / "shrunk.toml").write_text("# shrunk\n")
        (out / "shrink.md").write_text("# report\n")
        faults = [{"kind": "hold", "params": {"api_keys": [0], "client_view": "timeout",
                                              "release_on": {"api_key": 26},
                                              "after_marker": "abort"}}]
        result = SimpleNamespace(best={"faults": faults}, stopped="budget", runs=2,
                                 seconds=120.0, accepted=["partitions 3 -> 1"],
                                 undone=["rate 50 -> 25 records/s"],
                                 confirmed_rate=lambda: (1, 1))
        return result, {"scenario": out / "shrunk.toml", "report": out / "shrink.md"}


@pytest.fixture()
def fake(monkeypatch):
    runs = FakeRuns()
    monkeypatch.setattr(session, "run_one", runs.run_one)
    from verifier.orchestration.explore import shrinking
    monkeypatch.setattr(shrinking, "shrink_finding", runs.shrink)
    return runs


def _job(out: Path, budget_s: float, kafka: str = "3.5.2") -> ExploreJob:
    return ExploreJob(out=out, kafka_version=kafka, client="kafka-python", budget_s=budget_s,
                      trials=tuple(plan("kafka-python", 2)), shrink_budget_s=300)


def _explore(job, fake, lines=None) -> int:
    return explore(job, contextlib.nullcontext(), RunOptions(out=job.out), spark=None,
                   say=(lines.append if lines is not None else lambda _l: None),
                   clock=fake.clock)


def test_a_budgeted_call_finds_shrinks_names_and_a_second_call_resumes(tmp_path, fake):
    job = _job(tmp_path, budget_s=6 * 60)
    lines: list[str] = []
    assert _explore(job, fake, lines) == 1
    # 1 run (the FAIL), a 2-minute shrink, then runs while a run's time is left
    assert fake.ran[0] == BUGGY and len(fake.ran) == 4
    ledger = Ledger.open(tmp_path, "3.5.2", "kafka-python", [])
    name = "transactional-duplicate-same-session-produce-held-abort-marker"
    assert list(ledger.findings) == [name]
    finding = ledger.findings[name]
    assert finding["known"] == [{"bug": "KAFKA-14402", "status": "affected"}]
    assert finding["own"] is True and finding["found_after_s"] == 60
    assert Path(finding["scenario"]) == tmp_path / "findings" / f"{name}.toml"
    assert Path(finding["scenario"]).exists() and finding["shrink"]["runs"] == 2
    report = (tmp_path / "report.md").read_text()
    assert "KAFKA-14402 (documented affected here)" in report
    assert finding["shrink"]["undone"] == ["rate 50 -> 25 records/s"]
    assert ("undone (its first result did not reproduce): rate 50 -> 25 records/s; "
            "the result reproduced 1/1") in report
    assert f"{len(job.trials) - 4} of {len(job.trials)} planned trials untried" in report
    # 4 runs of 60 s and a 2-minute shrink: the rate with and without the shrink
    assert "4 trials in 6.0 min, shrinks included (0.67 per minute; 1.00 per minute of " \
        "the trials' own runs)" in report
    assert any(line.startswith("FINDING " + name) for line in lines)
    # the second call continues with what was not tried
    _explore(_job(tmp_path, budget_s=3 * 60), fake)
    assert len(fake.ran) == 7 and len(set(fake.ran)) == 7
    ledger = Ledger.open(tmp_path, "3.5.2", "kafka-python", [])
    assert len(ledger.trials) == 7 and len(ledger.sessions) == 2
    # each call's exit code: the folder's finding counts in the second call too
    assert [s["exit_code"] for s in ledger.sessions] == [1, 1]


def test_first_stops_at_the_first_finding_unshrunk_and_the_next_call_shrinks_it(
        tmp_path, fake):
    from dataclasses import replace

    lines: list[str] = []
    job = replace(_job(tmp_path, budget_s=3600), first=True)
    assert _explore(job, fake, lines) == 1
    assert fake.ran == [BUGGY] and fake.now == 60  # one run, no shrink
    ledger = Ledger.open(tmp_path, "3.5.2", "kafka-python", [])
    (finding,) = ledger.findings.values()
    assert finding["shrink"] is None and finding["found_after_s"] == 60
    assert any(line.startswith("--first: stopped at the first finding") for line in lines)
    # without --first the next call shrinks it first, then goes on with the trials
    _explore(_job(tmp_path, budget_s=4 * 60), fake)
    ledger = Ledger.open(tmp_path, "3.5.2", "kafka-python", [])
    assert ledger.findings[next(iter(ledger.findings))]["shrink"] is not None
    assert fake.now == 60 + 120 + 2 * 60 and len(fake.ran) == 3


def test_duplicates_of_one_fingerprint_are_merged(tmp_path, fake):
    # the single FAILs, then a pair holding it FAILs the same way: one finding, two runs
    pairs = [t for t in plan("kafka-python", 40) if len(t) == 2 and BUGGY in key_of(t)]
    job = ExploreJob(out=tmp_path, kafka_version="3.5.2", client="kafka-python",
                     budget_s=3600, trials=(plan()[0], pairs[0]))
    assert _explore(job, fake) == 1
    ledger = Ledger.open(tmp_path, "3.5.2", "kafka-python", [])
    assert len(ledger.findings) == 1
    (finding,) = ledger.findings.values()
    assert finding["trials"] == [BUGGY, key_of(pairs[0])] and len(finding["runs"]) == 2
    assert fake.now == 60 + 120 + 60  # one shrink only


def test_no_fail_exits_0_with_coverage_and_on_a_fixed_broker_names_the_contradiction(
        tmp_path, fake, monkeypatch):
    job = ExploreJob(out=tmp_path, kafka_version="4.1.1", client="kafka-python",
                     budget_s=3600, trials=tuple(plan("kafka-python", 0)[1:4]))
    assert _explore(job, fake) == 0
    ledger = Ledger.open(tmp_path, "4.1.1", "kafka-python", [])
    rows = coverage(ledger, [key_of(t) for t in job.trials])
    assert [r["tried"] for r in rows] == [1, 1, 1] and all(r["clean"] == 1 for r in rows)
    assert ledger.sessions[-1]["exit_code"] == 0
    fixed = ExploreJob(out=tmp_path / "fixed", kafka_version="4.1.1", client="kafka-python",
                       budget_s=3600, trials=tuple(plan("kafka-python", 0)[:1]))
    assert _explore(fixed, fake) == 1
    report = (tmp_path / "fixed" / "report.md").read_text()
    assert "KAFKA-14402 (documented FIXED here: a contradiction)" in report


def test_a_folder_explored_otherwise_is_refused(tmp_path, fake):
    _explore(ExploreJob(out=tmp_path, kafka_version="3.5.2", client="kafka-python",
                        budget_s=60, trials=tuple(plan()[:1])), fake)
    with pytest.raises(UsageError, match="was explored with kafka_version '3.5.2'"):
        Ledger.open(tmp_path, "4.1.1", "kafka-python", [])
    doc = json.loads((tmp_path / "explore.json").read_text())
    assert doc["format"] == "explore" and doc["kafka_version"] == "3.5.2"


def test_exposed_needs_the_perturbation_to_act():
    passed = {"columns": [{"name": "c", "verdict": "PASS", "exposure": {
        "faults": [{"fault": "hold", "acted": 1}]}}]}
    assert exposed(passed)
    # a PASS another fault of the trial exercised (a scale-out), the hold having acted on
    # nothing: not exposed
    other = {"columns": [{"name": "app:c", "verdict": "PASS", "exposure": {
        "faults": [{"fault": "hold", "acted": 0}, {"fault": "scale-out", "acted": 2}]}}]}
    assert not exposed(other)
    fail_unexposed = {"columns": [{"name": "c", "verdict": "FAIL", "exposure": {
        "faults": [{"fault": "hold", "acted": 0}, {"fault": "broker-config", "acted": 9}]}}]}
    assert not exposed(fail_unexposed)
    assert not exposed({"columns": [{"name": "c", "verdict": "NOT EXERCISED"}]})
    rec = trial_record(["a"], {"columns": [{"name": "c", "verdict": "NOT EXERCISED"}],
                               "run_dir": "r"}, 12.34)
    assert rec["outcome"] == "NOT EXERCISED" and rec["seconds"] == 12.3


def test_the_command_refuses_an_external_cluster_before_anything_starts(tmp_path, capsys):
    out = tmp_path / "x"
    code = main(["explore", "--bootstrap-servers", "broker:9092", "--out", str(out)])
    assert code == 64 and not out.exists()
    assert "local cluster only" in capsys.readouterr().err
    assert main(["explore", "--setting", "nonsense", "--out", str(out)]) == 64


def test_a_focused_folder_keeps_its_requests_and_refuses_another(tmp_path, fake):
    from verifier.orchestration.explore.space import parse_requests

    focus = parse_requests("endtxn,produce")
    job = ExploreJob(out=tmp_path, kafka_version="3.5.2", client="kafka-python",
                     budget_s=2 * 60, trials=tuple(plan("kafka-python", 2, focus)),
                     requests=focus)
    lines: list[str] = []
    _explore(job, fake, lines)
    assert "requests Produce,EndTxn" in lines[0]
    assert "requests Produce,EndTxn" in (tmp_path / "report.md").read_text()
    doc = json.loads((tmp_path / "explore.json").read_text())
    assert doc["requests"] == ["Produce", "EndTxn"]
    # the same focus resumes; another, or none, is refused as another version is
    Ledger.open(tmp_path, "3.5.2", "kafka-python", [], ["Produce", "EndTxn"])
    with pytest.raises(UsageError, match=r"--requests Produce,EndTxn \(now --requests "
                                         r"WriteTxnMarkers\)"):
        Ledger.open(tmp_path, "3.5.2", "kafka-python", [], ["WriteTxnMarkers"])
    with pytest.raises(UsageError, match=r"\(now every request type\)"):
        Ledger.open(tmp_path, "3.5.2", "kafka-python", [])
    # a folder of the whole space (one written before --requests had no key) refuses a focus
    whole = tmp_path / "whole"
    _explore(_job(whole, budget_s=60), fake)
    doc = json.loads((whole / "explore.json").read_text())
    del doc["requests"]
    (whole / "explore.json").write_text(json.dumps(doc))
    Ledger.open(whole, "3.5.2", "kafka-python", [])
    with pytest.raises(UsageError, match="every request type"):
        Ledger.open(whole, "3.5.2", "kafka-python", [], ["EndTxn"])


def test_the_command_refuses_an_unknown_request_type_before_anything_starts(tmp_path,
                                                                           capsys):
    out = tmp_path / "x"
    assert main(["explore", "--requests", "writetxnmarkers,fetch", "--out", str(out)]) == 64
    err = capsys.readouterr().err
    assert "unknown request type fetch" in err and "WriteTxnMarkers" in err
    assert not out.exists()
    # the copier's requests with a client that runs no copier: its application's only,
    # the checks' scenario run with that application
    from verifier import api

    job, request = api.plan_explore(tmp_path / "app", client="java",
                                    requests="txnoffsetcommit")
    assert [key_of(t) for t in job.trials] == ["txnoffsetcommit-copy-rebalance"]
    assert (request.app, request.app_instances) == ("java-copier-transactional", 2)
    assert "--app java-copier-transactional --app-instances 2" in \
        job.command_for(job.trials[0])(tmp_path / "s.toml")
    # a second call with another focus on a folder explored with one: refused by the
    # checks that come before anything starts (the api the command calls first)
    out.mkdir()
    Ledger.open(out, "3.5.2", "kafka-python", [], ["EndTxn"]).save()
    api.plan_explore(out, kafka_version="3.5.2", requests="ENDTXN")
    with pytest.raises(UsageError, match=r"--requests EndTxn \(now --requests Produce\)"):
        api.plan_explore(out, kafka_version="3.5.2", requests="produce")
