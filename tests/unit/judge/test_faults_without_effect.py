"""A fault that did not act makes the columns it concerns NOT EXERCISED, with the reason
(a start that failed, a proxy rule or hold that hit nothing); one whose start's outcome is
unknown makes them UNKNOWN.
Recorded runs with their nemesis history edited; judged without Spark (no check runs,
only the verdict), as test_start_failures does."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tests.unit.judge.builders import verdict_without_checks
from verifier.judge import verdict as V
from verifier.report.terminal import render_terminal
from verifier.rundata.layout import RunLayout
from verifier.rundata.vocab import EXIT_NOT_EXERCISED

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs"


_judge = verdict_without_checks


def _edited(tmp_path: Path, name: str, edit) -> Path:
    """A copy of recorded run ``name`` whose nemesis lines went through ``edit``."""
    run = tmp_path / name
    shutil.copytree(RUNS / name, run)
    path = RunLayout(run).nemesis
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
    path.write_bytes(b"".join(orjson.dumps(edit(op)) + b"\n" for op in lines))
    return run


def _verdicts(doc: dict) -> dict[str, str]:
    return {c["name"]: c["verdict"] for c in doc["columns"]}


@pytest.mark.parametrize("name", sorted(p.name for p in RUNS.iterdir() if p.is_dir()))
def test_every_recorded_fault_acted(name):
    """Near miss: on the recorded runs every fault acted, so no column is UNKNOWN for it
    (their start details carry the rule as created, ``hits`` 0: only a heal's counts)."""
    doc = _judge(RUNS / name)
    said = [r for c in doc["columns"] for r in c["reasons"] if r.startswith("fault ")]
    assert said == []


def test_a_proxy_rule_that_hit_nothing_exercised_no_column(tmp_path):
    def no_hits(op):
        if op.get("f") == "heal" and op.get("fault") == "ack-loss" and op["type"] == "ok":
            op["detail"]["hits"] = 0
        return op

    doc = _judge(_edited(tmp_path, "ack-loss", no_hits))
    assert set(_verdicts(doc).values()) == {V.NOT_EXERCISED}
    why = ("fault ack-loss #1 acted on none of its operations (requests or responses acted "
           "on (none by the rule))")
    assert all(c["not_exercised"] == [why] for c in doc["columns"])
    assert doc["exit_code"] == EXIT_NOT_EXERCISED
    assert why in render_terminal(doc)


def test_a_producer_kill_that_was_not_applied_exercised_only_its_column_not(tmp_path):
    def failed(op):
        if op.get("f") == "start" and op.get("target") == {"process": "producer:idempotent"} \
                and op["type"] == "ok":
            return {**{k: v for k, v in op.items() if k != "detail"}, "type": "fail",
                    "error": "process 'producer:idempotent' is not running"}
        return op

    base = _verdicts(_judge(RUNS / "producer-kill"))
    doc = _judge(_edited(tmp_path, "producer-kill", failed))
    assert _verdicts(doc) == {**base, "idempotent": V.NOT_EXERCISED}
    (col,) = [c for c in doc["columns"] if c["name"] == "idempotent"]
    assert col["not_exercised"] == ["fault producer-kill #2 was not applied: process "
                                    "'producer:idempotent' is not running"]


def test_a_pipeline_kill_of_unknown_outcome_leaves_only_that_pipeline_open(tmp_path):
    def unknown(op):
        if op.get("f") == "start" and op.get("id") == 1 and op["type"] == "ok":
            return {**op, "type": "info", "error": "ProcessError: boom"}
        return op

    base = _verdicts(_judge(RUNS / "pipeline-restart"))
    doc = _judge(_edited(tmp_path, "pipeline-restart", unknown))
    assert _verdicts(doc) == {**base, "pipeline:foreach-batch": "UNKNOWN"}


def test_a_failed_observer_kill_exercised_no_column(tmp_path):
    def failed(op):
        if op.get("f") == "start" and op.get("fault") == "observer-kill" and op["type"] == "ok":
            return {**op, "type": "fail", "error": "process 'observer' is not running"}
        return op

    doc = _judge(_edited(tmp_path, "observer-kill", failed))
    assert set(_verdicts(doc).values()) == {V.NOT_EXERCISED}


def test_a_users_own_client_id_is_counted_as_its_column(tmp_path):
    """A user's producer file that sets client.id (config.json ``overrides``): the proxy
    counts its requests under that id, and the exposure still finds its column."""
    run = _edited(tmp_path, "ack-loss", lambda op: op)
    cfg_path = RunLayout(run).config
    cfg = orjson.loads(cfg_path.read_bytes())
    cfg["producers"]["idempotent-0"]["overrides"] = {"client_id": "orders-service"}
    cfg_path.write_bytes(orjson.dumps(cfg))

    def with_clients(op):
        if op.get("f") == "heal" and op.get("fault") == "ack-loss" and op["type"] == "ok":
            op["detail"]["clients"] = {
                "orders-service": [300, 25], "verifier.generator.at-least-once-0": [300, 24],
                "verifier.generator.at-most-once-0": [300, 25],
                "verifier.generator.transactional-0": [219, 25]}
        return op

    path = RunLayout(run).nemesis
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
    path.write_bytes(b"".join(orjson.dumps(with_clients(op)) + b"\n" for op in lines))
    doc = _judge(run)
    (idem,) = [c for c in doc["columns"] if c["name"] == "idempotent"]
    assert idem["exposure"]["faults"][0]["acted"] == 25
    assert idem["verdict"] != V.NOT_EXERCISED
