"""`verifier analyze` and `verifier report` end to end on a recorded real run (baseline,
tests/data/runs) through Spark: exit code, a JUnit file a JUnit reader accepts, an HTML
page Chromium renders. Bad input, which exits 2 before any analysis, is a unit case
(tests/unit/judge/test_cli.py)."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET

import orjson
import pytest

from tests.unit.judge.test_cli import CHROMIUM, CLEAN
from verifier.cli import EXIT_OK, main

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory):
    """The clean run analyzed once through the CLI (the shared session is reused)."""
    run = tmp_path_factory.mktemp("run") / "clean"
    shutil.copytree(CLEAN, run)
    rc = main(["analyze", str(run)])
    return run, rc


def test_clean_run_exits_zero_and_writes_outputs(analyzed, capsys):
    run, rc = analyzed
    assert rc == EXIT_OK
    doc = orjson.loads((run / "verdict.json").read_bytes())
    assert doc["format"] == "verdict" and doc["version"] == 1
    assert [c["verdict"] for c in doc["columns"]] == ["PASS"] * 5


def test_junit_parses_with_a_case_per_mode(analyzed):
    run, _ = analyzed
    root = ET.parse(run / "junit.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    assert root.tag == "testsuites" and len(cases) == 5
    assert {c.get("classname") for c in cases} == {"baseline"}
    assert not root.findall(".//failure")


def test_report_rerenders_from_verdict_json(analyzed, capsys):
    run, _ = analyzed
    (run / "report.html").unlink()
    assert main(["report", str(run)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "transactional@read_uncommitted" in out and "VERDICT" in out
    assert (run / "report.html").stat().st_size > 1000


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed")
def test_html_report_renders_in_headless_chromium(analyzed, tmp_path):
    run, _ = analyzed
    png = tmp_path / "report.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}",
           "--window-size=1400,1000", (run / "report.html").as_uri()]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # not blank: a rendered table compresses far worse than a uniform page (~5 KB)
    assert len(data) > 20_000, len(data)
    shutil.copy(png, run / "report.png")  # kept next to the report for a human to look at
