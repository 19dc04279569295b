"""The KAFKA-19479 row's own evidence (issue 50): its forcing event is an error answer the
proxy forged (MESSAGE_TOO_LARGE to the Java at-least-once generator), read from the fault's
heal detail; an affected run's FAIL counts only with a lost record the generator committed
after flush() while its send was in flight, a fixed run's PASS only when the forged
refusal reached the application as failed sends before their commit."""

from __future__ import annotations

import pytest

from verifier.report.forced_evidence import (
    evidence_text,
    forced_by,
    forged_answers,
    run_evidence,
)

OLD = "verifier.generator.at-least-once-java-4.1.0-0"
NEW = "verifier.generator.at-least-once-java-4.1.1-0"


def _heal(clients: dict) -> list[dict]:
    """The fault's start (its rule: error and variant) and heal (per client [matched,
    forged]), as the nemesis history has them."""
    rule = {"kind": "error_answer", "api_keys": [0], "error": "MESSAGE_TOO_LARGE",
            "error_code": 10, "variant": "refuse", "client_id": OLD, "next": 12}
    return [{"type": "ok", "f": "start", "fault": "error-answer", "id": 1, "t": 6000,
             "detail": {"rule": rule, "trigger": "forged"}},
            {"type": "ok", "f": "heal", "fault": "error-answer", "id": 1, "t": 20000,
             "detail": {"rule": 1, "hits": sum(c[1] for c in clients.values()),
                        "chosen": 24, "unforged": 0, "clients": clients}}]


def test_each_column_gets_the_answers_forged_to_its_own_generator():
    ops = [*_heal({OLD: [40, 12], NEW: [38, 12], "verifier.readback.x": [3, 0]})]
    assert [f["forged"] for f in forged_answers(ops, "java-4.1.0")] == [12]
    assert [f["request"]["client_id"] for f in forged_answers(ops, "java-4.1.1")] == [NEW]
    assert len(forged_answers(ops)) == 2  # one client: every generator's
    assert forged_answers([*_heal({OLD: [40, 0]})], "java-4.1.0") == []


def _lost(seq: int) -> dict:
    return {"kind": "lost", "partition": 1, "offset": None, "pid": "at-least-once-java-4.1.0-0",
            "seq": seq}


@pytest.mark.parametrize("in_flight, reported, status, outcome, shows, open_", [
    # 4.1.0: committed while in flight, then lost: the bug, tied to the forged answers
    ([(1, 7), (1, 8)], 0, "affected", "FAIL", True, False),
    # a loss of records that were not committed in flight says nothing about the bug
    ([(2, 7)], 0, "affected", "FAIL", False, True),
    # 4.1.1: told of the failures before its commit, nothing in flight: clean
    ([], 5, "fixed", "PASS", False, False),
    # forged, but no failure reached the application (no split batch failed): says nothing
    ([], 0, "fixed", "PASS", False, True)])
def test_a_forged_refusal_ties_records_committed_in_flight(in_flight, reported, status,
                                                           outcome, shows, open_):
    forced = forged_answers([*_heal({OLD: [40, 12]})], "java-4.1.0")
    ev = run_evidence(status, outcome, forced, [_lost(7), _lost(8), _lost(9)],
                      lambda t: "", lambda pid: [],
                      lambda pid: in_flight, lambda pid: reported)
    assert ev["shows"] == shows
    assert forced_by([ev]) == "answer"
    assert (ev["open"] is not None) == open_, ev["open"]
    if shows:
        assert [a["seq"] for a in ev["anomalies"]] == [7, 8]
        assert "committed after flush()" in evidence_text(ev)
    assert ev["clean"] == (status == "fixed" and not open_)
    if ev["clean"]:
        assert ev["forced"][0]["text"].startswith(
            "12 Produce refused by the proxy with MessageSizeTooLarge")
