"""The pytest plugin's judging and assertion message, without a cluster: a verdict
document as a run writes it, asserted on in a pytest run of its own (a subprocess, so the
plugin loads as a user's suite loads it: through its pytest11 entry point). The fixtures
on a real cluster are tested in tests/containers/test_plugin.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.judge.model import KINDS
from verifier.pytest_plugin import DeliveryResult

SAMPLE = [{"topic": "ack-loss-x.user", "partition": p, "isolation": "read_committed",
           "pid": "user-0", "ses": 1, "seq": 40 + p, "offsets": [40 + p, 90 + p]}
          for p in range(3)]


def doc(dups: int = 7) -> dict:
    anomalies = {k: {"count": 0, "expectation": "forbidden", "sample": []} for k in KINDS}
    anomalies["duplicate-same-session"] = {"count": dups, "expectation": "tolerated",
                                           "sample": SAMPLE}
    col = {"name": "user:app.properties", "mode": "user:app.properties",
           "expect": "at-least-once", "isolations": ["read_committed", "read_uncommitted"],
           "verdict": "PASS", "forbidden": [], "reasons": [],
           "counts": {"sent": 100, "acknowledged": 100}, "anomalies": anomalies}
    return {"sink": "exactly-once", "columns": [col], "run_dir": "/runs/ack-loss/1"}


def result(demanded: str | None) -> DeliveryResult:
    dem = {"user:app.properties": demanded} if demanded else {}
    return DeliveryResult(doc(), Path("/runs/ack-loss/1"), "", dem)


def test_a_column_is_found_by_its_file_stem_and_judged_as_claimed():
    r = result(None)
    assert r.verdict("user:app") == "PASS"
    assert r.verdict("user:app.properties") == "PASS"
    assert r.anomalies("user:app") == {"duplicate-same-session": 7}
    with pytest.raises(KeyError, match="user:app.properties"):
        r.column("user:other")


def test_a_demanded_guarantee_fails_and_explains_itself():
    v = result("idempotent").verdict("user:app")
    assert v == "FAIL" and v != "PASS"
    lines = v.explain()
    assert lines[0] == ("column user:app.properties judged idempotent as demanded (its "
                        "settings claim at-least-once): FAIL, forbidden: 7 "
                        "duplicate-same-session")
    assert "  duplicate-same-session: 7 (FORBIDDEN) in ack-loss-x.user, e.g." in lines
    assert ("    partition 1 offsets [41, 91] (read_committed): producer user-0 session 1 "
            "seq 41") in lines
    assert "duplicate-same-session forbidden" in repr(v)


def test_a_failed_assertion_lists_the_duplicates(tmp_path):
    (tmp_path / "verdict.json").write_text(json.dumps(doc()))
    (tmp_path / "test_user.py").write_text(
        "import json, pathlib\n"
        "from verifier.pytest_plugin import DeliveryResult\n"
        "def test_needs_idempotence():\n"
        "    d = json.loads((pathlib.Path(__file__).parent / 'verdict.json').read_text())\n"
        "    r = DeliveryResult(d, pathlib.Path('/runs/ack-loss/1'), '',\n"
        "                       {'user:app.properties': 'idempotent'})\n"
        "    assert r.verdict('user:app') == 'PASS'\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           str(tmp_path / "test_user.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout[-3000:]
    out = proc.stdout
    assert "1 failed" in out
    assert "assert 'FAIL' == 'PASS'" in out
    assert "judged idempotent as demanded (its settings claim at-least-once): FAIL" in out
    assert "duplicate-same-session: 7 (FORBIDDEN)" in out
    assert "partition 0 offsets [40, 90] (read_committed): producer user-0 session 1 seq 40" \
        in out


def test_the_plugin_is_registered_for_every_pytest_run():
    proc = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert "--delivery-environment" in proc.stdout
    assert "--delivery-base-port" in proc.stdout
