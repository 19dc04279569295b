"""`verifier analyze` and `verifier report` on bad input: a damaged run folder exits 2
with one clear line, before any analysis (no JVM); the JUnit rendering of a verdict. The
analysis of a good run, its JUnit file and HTML page are in the integration tier
(tests/integration/judge/test_cli_analyze.py)."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from verifier.cli import EXIT_INCOMPLETE, main

CLEAN = Path(__file__).resolve().parents[2] / "data" / "runs" / "baseline"
CHROMIUM = shutil.which("chromium")


def test_junit_has_one_failure_per_forbidden_kind():
    from verifier.report import render_junit

    doc = orjson.loads((CLEAN / "config.json").read_bytes())  # any file
    assert doc  # (the verdict below is hand-made, the config only proves the path)
    col = {"name": "idempotent", "verdict": "FAIL", "forbidden": ["reorder", "lost"],
           "reasons": [], "anomalies": {"reorder": {"count": 2, "sample": [{"offset": 3}]},
                                         "lost": {"count": 1, "sample": []}}}  # fmt: skip
    xml = render_junit([{"scenario": "s", "run": "r", "sink": "exactly-once", "columns": [col]}])
    failures = ET.fromstring(xml).findall(".//testcase/failure")
    assert [f.get("type") for f in failures] == ["reorder", "lost"]
    assert '"offset": 3' in failures[0].text


def _copy(tmp_path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(CLEAN, run)
    return run


@pytest.mark.parametrize(("damage", "message"), [
    (lambda r: (r / "config.json").unlink(), "config.json: missing"),
    (lambda r: (r / "drain.json").write_text("{torn"), "drain.json: not valid JSON"),
    (lambda r: (r / "nemesis.jsonl").write_text(
        '{"type":"header","format":"nemesis-history","version":9,"run":"clean-run-1"}\n'),
     "unknown nemesis-history version 9"),
    (lambda r: _tear_middle(r / "histories" / "idempotent-0.jsonl"), "line 3: torn or not JSON"),
    (lambda r: shutil.rmtree(r / "observations" / "spark") or shutil.rmtree(
        r / "observations" / "plain"), "empty run: no observation Parquet files"),
    (lambda r: (r / "observations" / "_format.json").write_text(
        '{"format":"observations","version":2}'), "unknown observations version 2"),
])  # fmt: skip
def test_bad_run_folder_exits_2_with_a_clear_message(tmp_path, capsys, damage, message):
    run = _copy(tmp_path)
    damage(run)
    assert main(["analyze", str(run)]) == EXIT_INCOMPLETE
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _tear_middle(path: Path) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2][:15]
    path.write_bytes(b"\n".join(lines))


def test_torn_last_history_line_is_tolerated(tmp_path):
    from verifier.judge.checks.load import read_run_files

    run = _copy(tmp_path)
    path = run / "histories" / "at-least-once-0.jsonl"
    path.write_bytes(path.read_bytes() + b'{"type":"invoke","f":"se')
    files = read_run_files(run)
    assert files.history.num_rows > 0


def test_empty_history_is_an_error(tmp_path, capsys):
    run = _copy(tmp_path)
    for p in (run / "histories").glob("*.jsonl"):
        p.write_bytes(p.read_bytes().split(b"\n")[0] + b"\n")
    assert main(["analyze", str(run)]) == EXIT_INCOMPLETE
    assert "empty run" in capsys.readouterr().err


def test_missing_or_unknown_verdict_for_report(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == EXIT_INCOMPLETE
    (tmp_path / "verdict.json").write_text('{"format":"verdict","version":7}')
    assert main(["report", str(tmp_path)]) == EXIT_INCOMPLETE
    assert "unknown verdict version 7" in capsys.readouterr().err
