"""The fault summary line of a hold fault: what was held, what released it, and what the
broker answered, from the nemesis history's hold events."""

from __future__ import annotations

import json

from verifier.report.faults import fault_summary
from verifier.rundata.layout import RunLayout

REQUEST = {"api": "Produce", "api_key": 0, "transactional_id": "r.transactional-0",
           "partitions": [{"topic": "t", "partition": 1, "base_sequence": 40}]}


def _write(run_dir, ops):
    path = RunLayout(run_dir).nemesis
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "header", "format": "nemesis-history", "version": 1, "run": "r"}, *ops]
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))


def test_hold_line_names_request_release_and_answer(tmp_path):
    base = {"fault": "hold", "target": {"all": True}, "id": 1}
    _write(tmp_path, [
        {"type": "ok", "f": "start", **base, "t": 1, "detail": {"rule": {"id": 3}}},
        {"type": "event", "f": "hold", **base, "t": 2,
         "detail": {"hold": 1, "rule": 3, "request": REQUEST}},
        {"type": "event", "f": "release", **base, "t": 3,
         "detail": {"hold": 1, "rule": 3, "request": REQUEST, "reason": "EndTxn response",
                    "held_ms": 812, "delivered": True}},
        {"type": "event", "f": "answer", **base, "t": 4,
         "detail": {"hold": 1, "rule": 3, "request": REQUEST,
                    "response": {"partitions": [["t", 1, 0, 57]]}}},
        {"type": "ok", "f": "heal", **base, "t": 5, "detail": {"matched": 3, "hits": 1}},
    ])
    (line,) = fault_summary(tmp_path)
    assert line == ("hold on every broker: fired: held Produce t-1 seq 40, released by "
                    "EndTxn response (held 812 ms); broker answered error 0 offset 57")


def test_a_hold_that_matched_nothing_says_so(tmp_path):
    base = {"fault": "hold", "target": {"node": 2}, "id": 1}
    _write(tmp_path, [{"type": "ok", "f": "start", **base, "t": 1, "detail": {}},
                      {"type": "ok", "f": "heal", **base, "t": 2, "detail": {}}])
    assert fault_summary(tmp_path) == ["hold on broker 2: fired, no request matched"]
