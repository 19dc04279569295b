"""The error-answer fault's presets end to end (issue 50, docs/faults.md "Answering with an
error"): `verifier chaos --scenario error-answer-replaced` and `--scenario
error-answer-refused`, one run each.

- replaced (Produce answered REQUEST_TIMED_OUT after the append): the at-least-once column
  shows duplicates, tolerated (PASS), the idempotent and transactional ones none;
- refused (Produce answered NOT_LEADER_OR_FOLLOWER, never forwarded): no retrying mode
  loses or duplicates a record;
- both: every cell PASS, every producer column exercised, its exposure the answers the
  rule forged to its generator (the heal's per-client counts), every chosen answer forged.

Not part of `make test` (two cluster runs, a few minutes); ports and folder from
VERIFIER_CHAOS_BASE_PORT and VERIFIER_CHAOS_STATE_DIR (defaults: 31300,
.state/chaos-error-answers).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
BASE_PORT = os.environ.get("VERIFIER_CHAOS_BASE_PORT", "31300")
STATE_DIR = os.environ.get("VERIFIER_CHAOS_STATE_DIR",
                           str(ROOT / ".state" / "chaos-error-answers"))
#: the columns whose generators retry (at-most-once sends each record once: a refused or
#: replaced send is its loss or its unknown outcome, both tolerated)
RETRYING = ("at-least-once", "idempotent", "transactional@read_committed")
DUPLICATES = ("duplicate-same-session", "duplicate-cross-session")


def _count(col: dict, kinds: tuple[str, ...]) -> int:
    return sum(col["anomalies"][k]["count"] for k in kinds)


def _heal(run_dir: Path) -> dict:
    """The error-answer fault's heal detail in the run's nemesis history."""
    for line in (run_dir / "nemesis.jsonl").read_bytes().splitlines():
        e = orjson.loads(line)
        if e.get("type") == "ok" and e.get("f") == "heal" and e.get("fault") == "error-answer":
            return e["detail"]
    raise AssertionError(f"no error-answer heal in {run_dir / 'nemesis.jsonl'}")


def check_forged_exposure(doc: dict) -> dict:
    """Every cell PASS, the fault fired, every chosen answer forged, and each producer
    column's exposure is the answers forged to its generator; the columns by name."""
    cols = {c["name"]: c for c in doc["columns"]}
    assert {c: v["verdict"] for c, v in cols.items()} == dict.fromkeys(cols, "PASS"), \
        {c: (v["verdict"], v["reasons"]) for c, v in cols.items()}
    assert doc["fault_summary"] and all(": fired" in ln for ln in doc["fault_summary"]), \
        doc["fault_summary"]
    heal = _heal(Path(doc["run_dir"]))
    assert heal["unforged"] == 0 and heal["hits"] > 0, heal
    assert heal["chosen"] >= heal["hits"], heal  # one answered after the heal: not counted
    forged = {client.rsplit(".", 1)[-1].rsplit("-", 1)[0]: n
              for client, (_, n) in heal["clients"].items()}
    for name, col in cols.items():
        (fault,) = col["exposure"]["faults"]
        assert fault["fault"] == "error-answer" and fault["exercised"], (name, fault)
        assert fault["acted"] == forged[col["mode"]] > 0, (name, fault, heal["clients"])
    assert sum(forged.values()) == heal["hits"], heal
    return cols


def check_replaced(doc: dict) -> None:
    """Appended but told it failed: at-least-once writes again (duplicates, tolerated),
    idempotence and transactions do not; nothing is lost."""
    cols = check_forged_exposure(doc)
    assert _count(cols["at-least-once"], DUPLICATES) > 0, cols["at-least-once"]["anomalies"]
    for name in ("idempotent", "transactional@read_committed"):
        assert _count(cols[name], DUPLICATES) == 0, (name, cols[name]["anomalies"])
    for name in RETRYING:
        assert _count(cols[name], ("lost",)) == 0, (name, cols[name]["anomalies"]["lost"])


def check_refused(doc: dict) -> None:
    """Never written: a retrying client writes each record once, nothing lost or
    duplicated."""
    cols = check_forged_exposure(doc)
    for name in RETRYING:
        assert _count(cols[name], ("lost", *DUPLICATES)) == 0, (name, cols[name]["anomalies"])


def run_scenario(out: Path, scenario: str) -> dict:
    verifier = Path(sys.executable).with_name("verifier")
    proc = subprocess.run([str(verifier), "chaos", "--scenario", scenario, "--seed", "1",
                           "--out", str(out), "--base-port", BASE_PORT,
                           "--state-dir", STATE_DIR],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    (doc,) = orjson.loads((out / "verdict.json").read_bytes())["runs"]
    assert doc["scenario"] == scenario
    return doc


@pytest.mark.parametrize(("scenario", "check"), [("error-answer-replaced", check_replaced),
                                                 ("error-answer-refused", check_refused)])
def test_error_answer_preset(tmp_path, scenario, check):
    check(run_scenario(tmp_path, scenario))
