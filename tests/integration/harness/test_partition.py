"""A real network partition: nftables inside a network namespace this test creates,
around a separate 3-node cluster whose brokers run as their own Unix users."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import port_base
from verifier.harness.netns import NetNamespace
from verifier.rundata.jvm import PROJECT_ROOT

pytestmark = pytest.mark.integration

BASE_PORT = port_base("partition")


def _private_ancestor() -> str | None:
    """A folder above the project that other Unix users cannot enter (e.g. a 0700 temp
    folder): the partition's brokers run as their own users and could not read the jars."""
    for d in [PROJECT_ROOT, *PROJECT_ROOT.parents]:
        if not os.stat(d).st_mode & 0o001:
            return str(d)
    return None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nft"),
                    reason="needs root and nftables")
@pytest.mark.skipif(_private_ancestor() is not None,
                    reason=f"the brokers run as their own Unix users and cannot enter "
                           f"{_private_ancestor()} (mode without o+x) to read the jars")
def test_partition_cuts_one_broker_off_and_heals(tmp_path):
    state_dir = PROJECT_ROOT / ".state" / f"test-partition-{BASE_PORT}"
    with NetNamespace(f"verifier-test-{os.getpid()}") as ns:
        proc = subprocess.run(
            ns.argv([sys.executable, "-m", "tests.integration.harness.partition_check",
                     "--base-port", str(BASE_PORT), "--state-dir", str(state_dir)]),
            capture_output=True, text=True, timeout=400, cwd=PROJECT_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    node = result["isolated"]
    assert node in result["before"]["brokers"]
    assert node not in result["during"]["brokers"]  # fenced by the majority
    assert all(p["leader"] != node and node not in p["isr"]
               for p in result["during"]["partitions"].values())
    assert all(len(p["isr"]) == 3 for p in result["after"]["partitions"].values())
    assert not state_dir.exists()  # the check stops its cluster
