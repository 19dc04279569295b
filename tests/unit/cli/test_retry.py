"""--retry-not-exercised N (issue 49, docs/ci.md): a run that would exit 3 re-runs only
the scenarios holding a NOT EXERCISED cell; each such outcome is replaced by its re-run's,
every attempt is reported, and the exit code follows what is kept. The runs here are the
recorded matrix's documents (tests/unit/report/fixtures/matrix.json) written by a stand-in
for the chaos run, so what is checked is the policy, the outputs and junit.xml as a JUnit
consumer reads it."""

from __future__ import annotations

import argparse
import copy
import io
import json
from pathlib import Path
from types import SimpleNamespace

from junitparser import Failure, JUnitXml

from verifier.assess.exitcodes import of_matrix, of_verdicts
from verifier.assess.outputs import write_matrix
from verifier.cli.retry import run_with_retries
from verifier.judge.verdict import apply_exposure
from verifier.orchestration.planning import RunOptions

FIXTURE = Path(__file__).resolve().parents[1] / "report" / "fixtures" / "matrix.json"
MISSED = {"idempotent": {"exercised": False, "reasons": ["ack-loss #1: hit none of its "
                                                          "requests"]}}


def _docs() -> dict[str, dict]:
    return {d["scenario"]: d for d in copy.deepcopy(json.loads(FIXTURE.read_text())["runs"])
            if d["scenario"] in ("baseline", "ack-loss")}


class Runs:
    """Stands in for the chaos run: attempt k writes the documents ``plan[k]`` gives for
    the scenarios it is asked to run and hands them over (``args.collect``), as run_matrix
    does, and returns their exit code."""

    def __init__(self, plan):
        self.plan, self.calls = plan, []

    def __call__(self, args, profile, scenarios, env, opts) -> int:
        self.calls.append(([s.name for s in scenarios], opts.seed, opts.repeat, opts.out))
        docs = []
        for s in scenarios:
            for _ in range(opts.repeat):
                doc = copy.deepcopy(self.plan[len(self.calls) - 1][s.name])
                doc["run_dir"] = f"{opts.out}/{s.name}/run"
                docs.append(doc)
        args.collect.extend(docs)
        return of_matrix(write_matrix(docs, Path(opts.out), {"profile": "quick"}), docs)[0]


def _prepared(tmp_path):
    scenarios = [SimpleNamespace(name="baseline"), SimpleNamespace(name="ack-loss")]
    return ("profile", scenarios, "env", RunOptions(out=tmp_path, seed=1))


def _missed() -> dict[str, dict]:
    docs = _docs()
    apply_exposure(docs["ack-loss"], MISSED)
    return docs


def test_a_missed_fault_re_run_and_exercised_exits_0(tmp_path):
    runs = Runs([_missed(), _docs()])  # the re-run's faults hit every column
    out = io.StringIO()
    code = run_with_retries(runs, argparse.Namespace(retry_not_exercised=2),
                            _prepared(tmp_path), out)
    assert code == 0
    # only ack-loss ran again, once, with seeds of its own, in its own folder
    assert runs.calls[1] == (["ack-loss"], 1001, 1, tmp_path / "retry-1")
    assert len(runs.calls) == 2
    said = out.getvalue()
    assert "ack-loss / idempotent: kept PASS" in said
    assert "attempt 1: NOT EXERCISED: ack-loss #1: hit none of its requests" in said
    assert "exit code 0 (3 before the re-runs)" in said
    report = json.loads((tmp_path / "retries.json").read_text())
    assert [a["attempt"] for a in report["attempts"]] == [1, 2]
    assert report["cells"][0]["kept"] == "PASS" and len(report["cells"][0]["attempts"]) == 2
    matrix = json.loads((tmp_path / "verdict.json").read_text())
    assert matrix["exit_code"] == 0 and matrix["retries"]["retry_not_exercised"] == 2
    first = json.loads((tmp_path / "verdict-attempt-1.json").read_text())
    assert first["exit_code"] == 3  # the first attempt, as it was
    # a CI dashboard: the case passes, its output says both attempts
    cases = {(s.name, c.name): c for s in JUnitXml.fromfile(str(tmp_path / "junit.xml"))
             for c in s}
    case = cases[("ack-loss", "idempotent")]
    assert case.is_passed
    assert "attempt 1: NOT EXERCISED" in case.system_out
    assert "attempt 2: PASS" in case.system_out


def test_still_missed_after_every_re_run_exits_3_and_reports_each(tmp_path):
    runs = Runs([_missed(), _missed(), _missed()])
    out = io.StringIO()
    code = run_with_retries(runs, argparse.Namespace(retry_not_exercised=2),
                            _prepared(tmp_path), out)
    assert code == 3
    assert [c[1] for c in runs.calls] == [1, 1001, 2001]  # two re-runs, their own seeds
    cell = json.loads((tmp_path / "retries.json").read_text())["cells"][0]
    assert [a.split(":")[0] for a in cell["attempts"]] == ["attempt 1", "attempt 2",
                                                          "attempt 3"]
    cases = {(s.name, c.name): c for s in JUnitXml.fromfile(str(tmp_path / "junit.xml"))
             for c in s}
    [failure] = cases[("ack-loss", "idempotent")].result
    assert isinstance(failure, Failure) and failure.type == "not-exercised"


def test_a_fail_on_the_re_run_fails_the_run(tmp_path):
    failed = _docs()
    col = next(c for c in failed["ack-loss"]["columns"] if c["name"] == "idempotent")
    col.update(verdict="FAIL", forbidden=["duplicate-same-session"])
    col["anomalies"]["duplicate-same-session"]["count"] = 3
    code = run_with_retries(Runs([_missed(), failed]),
                            argparse.Namespace(retry_not_exercised=1), _prepared(tmp_path),
                            io.StringIO())
    assert code == 1 == of_verdicts(["PASS", "FAIL"])


def test_without_the_flag_or_a_3_nothing_runs_again(tmp_path):
    runs = Runs([_missed()])
    assert run_with_retries(runs, argparse.Namespace(retry_not_exercised=0),
                            _prepared(tmp_path)) == 3
    runs = Runs([_docs()])
    assert run_with_retries(runs, argparse.Namespace(retry_not_exercised=3),
                            _prepared(tmp_path / "b")) == 0
    assert len(runs.calls) == 1 and not (tmp_path / "b" / "retries.json").exists()
