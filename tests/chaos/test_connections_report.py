"""The connection report of a broker-kill run with all three clients side by side: every
client's generators lose their connections to the killed broker, and the report says per
process how many it lost and re-opened, how long it went without an answer and how soon
it answered after the restart (issue 15). Not part of `make test` (minutes of load)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from verifier.rundata import jvm

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
BASE_PORT = os.environ.get("VERIFIER_CHAOS_BASE_PORT", "29900")
STATE_DIR = os.environ.get("VERIFIER_CHAOS_STATE_DIR", str(ROOT / ".state" / "chaos-clients"))
CLIENTS = ("java", "librdkafka", "kafka-python")


def test_broker_kill_reports_each_clients_reconnects_and_recovery(tmp_path):
    if not jvm.java_generator_built():
        pytest.skip("the Java generator is not built: run `make setup`")
    pytest.importorskip("confluent_kafka")
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--clients", ",".join(CLIENTS),
                           "--profile", "quick", "--scenario", "broker-kill", "--seed", "1",
                           "--out", str(tmp_path), "--base-port", BASE_PORT,
                           "--state-dir", STATE_DIR],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    said = proc.stdout[-8000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, said
    assert "longest silence" in proc.stdout and "first answer after heal" in proc.stdout, said

    doc = orjson.loads((tmp_path / "verdict.json").read_bytes())["runs"][0]
    section = doc["connections"]
    assert section["available"], section
    (fault,) = [f for f in section["faults"] if f["fault"] == "broker-kill"]
    gens = {p: r for p, r in fault["processes"].items() if p.startswith("generator ")}
    for client in CLIENTS:  # every client's generators were connected to the killed broker
        mine = {p: r for p, r in gens.items() if p.endswith(f"-{client}-0")}
        assert len(mine) == 4, (client, sorted(gens))
        assert any(r["closed_in_fault"] >= 1 for r in mine.values()), (client, mine)
        stalled = {f["subject"] for f in section["findings"] if f["check"] == "no-reconnect"}
        for p, r in mine.items():  # answered again after the kill, or a finding says not
            assert r["silence_s"] is not None or p in stalled, (p, r, section["findings"])
    cases = ET.parse(tmp_path / "junit.xml").getroot().findall(
        "./testsuite/testcase[@name='connections']")
    assert len(cases) == 1 and cases[0].find("failure") is None
