"""Issue 47's stateful Kafka Streams presets judged by the reference oracle, end to end
(written 2026-11-29).

A count per key (``verifier.apps.CountPerKey``: 64 keys, a state store, a repartition
topic) at exactly_once_v2 and at at_least_once, two instances each, an instance killed
twice while Streams has records handed to its producer since its last commit; after the
drain each runs once more without faults over the same input and the final count per
key is compared. exactly_once_v2: every key's count equal to the fault-free run's, PASS
with exposure; at_least_once: no key below it (over-counts tolerated), PASS. In both the
fault-free counts add up to the input log's records (else the column would be UNKNOWN).

Chaos tier (`make test-chaos`), about 2.5 minutes (the same command by hand: 146 s,
2026-11-29, docs/applications.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
RC, RU = "read_committed", "read_uncommitted"


def check_count_cells(doc: dict) -> None:
    """The cells of one run's verdict.json (also run on a recorded one:
    docs/applications.md)."""
    cols = {c["name"]: c for c in doc["columns"]}
    for name in ("streams-count-eos", "streams-count-alo"):
        for iso in (RC, RU):
            col = cols[f"app:{name}@{iso}"]
            assert col["verdict"] == "PASS", (name, iso, col["verdict"], col["reasons"])
            detail = col["oracle"]
            assert detail["claim"] == "final count per key"
            # the fault-free run counted every input record once
            assert detail["reference_total"] == col["counts"]["sent"] > 0, detail
            lost = col["anomalies"]["lost"]["count"]
            assert lost == 0 and all(d["delta"] > 0 for d in detail["differences"]), detail
        kills = cols[f"app:{name}@{RC}"]["exposure"]["faults"]
        assert kills and any(k["acted"] > 0 for k in kills), (name, kills)
    eos = cols[f"app:streams-count-eos@{RC}"]
    assert eos["oracle"]["differences"] == []  # exactly once: equal per key
    alo = cols[f"app:streams-count-alo@{RC}"]["anomalies"]["duplicate-delivery"]
    assert alo["expectation"] == "tolerated" and alo["count"] > 0


def test_the_stateful_streams_presets_against_their_fault_free_runs(tmp_path):
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--app",
                           "streams-count-eos,streams-count-alo",
                           "--scenario", "instance-kill", "--out", str(tmp_path),
                           "--base-port", "29950", "--state-dir", str(tmp_path / "state")],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    said = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, said
    matrix = orjson.loads((tmp_path / "verdict.json").read_bytes())
    assert len(matrix["runs"]) == 1, said
    check_count_cells(matrix["runs"][0])
