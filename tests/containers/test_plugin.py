"""The pytest plugin on containers, as a user's suite runs it: the README's example
(examples/pytest) passes, and the same at-least-once settings held to the idempotent
guarantee under lost acknowledgements fail with a message that lists the duplicates.

Both run in one pytest process of their own (a fresh folder, the plugin loaded through
its entry point, ``--delivery-environment docker``), sharing its cluster and Spark."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.containers.conftest import PORTS, leftovers
from verifier.harness.containers.cluster import LABEL

pytestmark = pytest.mark.containers

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytest"

DEMAND = '''
def test_demanding_idempotence_from_at_least_once_settings(delivery):
    result = delivery.run("ack-loss", producer_config="app.properties", modes=(),
                          time_scale=0.5, expect="idempotent")
    assert result.verdict("user:app") == "PASS"
'''


@pytest.mark.timeout(1500)  # a cluster, Spark and two ack-loss runs
def test_the_example_passes_and_a_demanded_guarantee_fails_listing_the_duplicates(
        docker_client, tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(EXAMPLE, suite)
    (suite / "test_demand.py").write_text(DEMAND)
    junit = tmp_path / "junit.xml"
    # --basetemp: the example is a project of its own, so its pytest keeps pytest's three
    # sessions under /tmp/pytest-of-USER and would prune the earlier CI sessions' folders
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W",
         "ignore::DeprecationWarning", "--basetemp", str(tmp_path / "inner"),
         "--delivery-environment", "docker",
         "--delivery-base-port", str(PORTS["plugin"]), "--junitxml", str(junit), str(suite)],
        cwd=suite, capture_output=True, text=True, timeout=1200)
    out = proc.stdout
    assert proc.returncode == 1, out[-6000:] + proc.stderr[-2000:]  # one test failed
    assert "1 failed, 1 passed" in out, out[-3000:]
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    example = cases["test_app_producer_keeps_its_promise_under_lost_acks"]
    assert example.find("failure") is None and example.find("skipped") is None
    failure = cases["test_demanding_idempotence_from_at_least_once_settings"].find("failure")
    assert failure is not None
    message = failure.get("message", "") + (failure.text or "")
    assert "assert 'FAIL' == 'PASS'" in message
    assert ("column user:app.properties judged idempotent as demanded (its settings "
            "claim at-least-once): FAIL, forbidden:") in message
    assert "duplicate-same-session: " in message and "(FORBIDDEN)" in message
    assert "partition " in message and "producer user-0 session 1 seq " in message
    assert leftovers(docker_client, LABEL) == []
