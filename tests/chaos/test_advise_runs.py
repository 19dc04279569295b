"""`verifier advise` checked by real runs (issue 37), chaos tier: for each of the five
real-world files of tests/integration/cli/test_advise_runs.py, a short run of the scenario
the advice names, on the quick profile's time scale, one at a time: every cell agrees with
the advice, and the hazard it names shows. Minutes each: `make test-chaos`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cli.test_advise_runs import BASE_PORT, FILES, OUT, ROOT, STATE_DIR, _file

pytestmark = pytest.mark.chaos


def _chaos(*argv) -> subprocess.CompletedProcess:
    verifier = Path(sys.executable).with_name("verifier")
    return subprocess.run([str(verifier), "chaos", "--profile", "quick", "--base-port",
                           BASE_PORT, "--state-dir", STATE_DIR, *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=1200)


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_named_scenario_agrees_with_the_advice(tmp_path, name):
    _, client, _, hazard, scenario = FILES[name]
    path = _file(tmp_path, name)
    out = OUT / name
    if hazard is None:  # refused before anything starts, as the client refuses it
        proc = _chaos("--producer-config", str(path), "--scenario", "baseline",
                      "--out", str(out))
        assert proc.returncode == 64, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "transactional" in proc.stderr and "idempotence" in proc.stderr
        return
    argv = ["--client", client, "--scenario", scenario, "--out", str(out)]
    if FILES[name][0].startswith("kafka."):  # a source: the transactional column read at
        argv[1] = "kafka-python"             # read_uncommitted is what it reads
    else:
        argv += ["--producer-config", str(path)]
    proc = _chaos(*argv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "verdicts against the advice" in proc.stdout
    matrix = json.loads((out / "verdict.json").read_text())
    rows = [r for d in matrix["runs"] for r in d["advice_check"]]
    assert rows and all(r["agree"] for r in rows), [r for r in rows if not r["agree"]]
    wanted = "user:" if "--producer-config" in argv else "transactional@read_uncommitted"
    mine = [r for r in rows if r["column"].startswith(wanted)]
    assert mine and hazard[1] in mine[0]["demonstrated"], mine
    assert "Verdicts against the advice" in (out / "report.html").read_text()
