"""Issue 47's group protocols side by side, end to end (chaos tier; 122 s on
2026-11-30).

One cluster, one run: the Java transactional copier in a classic group and in a KIP-848
consumer group (``--group-protocol classic,consumer``), beside the share-group copier
(KIP-932), each instance killed while a batch is between its steps. Both transactional
columns PASS at read_committed with no loss and no duplicate, the broker describing each
group as the protocol its column names; the share copier PASSes as at-least-once, its
archived records (if a kill exhausted any record's attempts) counted apart, never lost.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
RC = "read_committed"
COMMAND = ["chaos", "--app", "java-copier-transactional,java-share-copier",
           "--group-protocol", "classic,consumer", "--scenario", "instance-kill"]


def check_side_by_side(doc: dict, readbacks: dict) -> None:
    """The cells of one run (its verdict.json and each app's readback.json); also run on a
    recorded run folder (docs/applications.md)."""
    cols = {c["name"]: c for c in doc["columns"]}
    for protocol in ("classic", "consumer"):
        name = f"java-copier-transactional[{protocol}]"
        col = cols[f"app:{name}@{RC}"]
        assert col["verdict"] == "PASS", col
        assert all(col["anomalies"].get(k, {}).get("count", 0) == 0
                   for k in ("lost", "duplicate-delivery")), col["anomalies"]
        assert readbacks[name]["group_type_seen"] == protocol, readbacks[name]
        kills = col["exposure"]["faults"]
        assert kills and any(k["acted"] > 0 for k in kills), (name, kills)
    share = cols[f"app:java-share-copier@{RC}"]
    assert share["verdict"] == "PASS", share
    assert share["anomalies"].get("lost", {}).get("count", 0) == 0
    archived = share["anomalies"].get("archived")
    assert archived is None or archived["expectation"] == "tolerated"
    assert readbacks["java-share-copier"]["group_type"] == "share"
    assert readbacks["java-share-copier"]["delivery_limit"] == 2


def test_both_group_protocols_and_a_share_group_side_by_side(tmp_path):
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), *COMMAND, "--out", str(tmp_path),
                           "--base-port", "29900", "--state-dir", str(tmp_path / "state")],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    said = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, said
    run = next(p.parent for p in tmp_path.glob("instance-kill/*/verdict.json"))
    readbacks = {p.parent.name: orjson.loads(p.read_bytes())
                 for p in (run / "apps").glob("*/readback.json")}
    check_side_by_side(orjson.loads((run / "verdict.json").read_bytes()), readbacks)
