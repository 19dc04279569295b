"""Issue 47's first proof, end to end (written 2026-11-29, not yet run in the chaos tier):
the three copier presets in one consumer group each, an instance killed twice while a
batch is between its two steps, three runs. The commit-before copier (claiming
at-least-once) loses the batch it committed and had not written: FAIL 3/3 with ``lost``;
the commit-after copier writes it again: duplicates, tolerated, PASS; the transactional
copier aborts it: PASS at read_committed, the aborted batch read at read_uncommitted. Each
column's exposure says what the kills hit.

Chaos tier (`make test-chaos`).
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


def test_each_copier_gets_what_its_commit_strategy_gives(tmp_path):
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--app",
                           "copier-commit-before,copier-commit-after,copier-transactional",
                           "--scenario", "instance-kill", "--repeat", "3",
                           "--out", str(tmp_path), "--base-port", "29900",
                           "--state-dir", str(tmp_path / "state")],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    said = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 1, said
    matrix = orjson.loads((tmp_path / "verdict.json").read_bytes())
    outcomes = matrix["grid"]["outcomes"]["instance-kill"]
    assert outcomes[f"app:copier-commit-before@{RC}"] == ["FAIL"] * 3, said
    assert outcomes[f"app:copier-commit-after@{RC}"] == ["PASS"] * 3, said
    assert outcomes[f"app:copier-transactional@{RC}"] == ["PASS"] * 3, said
    for doc in matrix["runs"]:
        cols = {c["name"]: c for c in doc["columns"]}
        assert cols[f"app:copier-commit-before@{RC}"]["forbidden"] == ["lost"]
        assert cols[f"app:copier-commit-after@{RC}"]["anomalies"]["duplicate-delivery"][
            "count"] > 0
        # the aborted transaction's records, in the log and read at read_uncommitted
        # beside their committed rewrite: the kill hit a written, uncommitted batch
        ru = cols["app:copier-transactional@read_uncommitted"]["anomalies"]
        assert ru.get("duplicate-delivery", {}).get("count", 0) > 0, ru
        for name in ("copier-commit-before", "copier-commit-after", "copier-transactional"):
            kills = cols[f"app:{name}@{RC}"]["exposure"]["faults"]
            assert kills and all(k["acted"] for k in kills), (name, kills)
