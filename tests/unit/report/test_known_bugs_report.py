"""A then_hold in the reports: the fault line says the next request was held back until
the late one was answered, and the evidence column lists only the late requests' answers
(not those of the requests held back behind them)."""

from __future__ import annotations

import json

from verifier.report.faults import fault_summary
from verifier.report.known_bugs import render_known_bug_grid
from verifier.report.versions import held_answers
from verifier.rundata.layout import RunLayout

LATE = {"api": "Produce", "api_key": 0, "transactional_id": "r.transactional-0",
        "partitions": [{"topic": "t", "partition": 0, "base_sequence": 40}]}
NEXT = {"api": "AddPartitionsToTxn", "api_key": 24, "transactional_id": "r.transactional-0"}


def _write(run_dir, ops):
    path = RunLayout(run_dir).nemesis
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "header", "format": "nemesis-history", "version": 1, "run": "r"}, *ops]
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))


def test_a_gated_request_is_a_step_of_the_schedule_not_a_late_answer(tmp_path):
    base = {"type": "event", "fault": "hold", "target": {"all": True}, "id": 1}
    _write(tmp_path, [
        {"type": "ok", "f": "start", "fault": "hold", "target": {"all": True}, "id": 1,
         "t": 1, "detail": {"rule": {"id": 3}}},
        {**base, "f": "hold", "t": 2, "detail": {"hold": 1, "request": LATE,
                                                 "client_view": "timeout"}},
        {**base, "f": "release", "t": 3, "detail": {"hold": 1, "request": LATE,
                                                    "reason": "EndTxn response",
                                                    "held_ms": 9000}},
        {**base, "f": "hold", "t": 4, "detail": {"hold": 2, "request": NEXT,
                                                 "client_view": "delay"}},
        {**base, "f": "answer", "t": 5, "detail": {"hold": 1, "request": LATE, "response": {
            "partitions": [["t", 0, 0, 171]]}}},
        {**base, "f": "release", "t": 6, "detail": {"hold": 2, "request": NEXT,
                                                    "reason": "answered: hold 1",
                                                    "held_ms": 4}},
        {**base, "f": "answer", "t": 7, "detail": {"hold": 2, "request": NEXT, "gated": True,
                                                   "response": {"error_code": 0}}},
    ])
    assert held_answers(tmp_path) == {"": "accepted at 171"}
    (line,) = fault_summary(tmp_path)
    assert "held Produce t-0 seq 40, released by EndTxn response (held 9000 ms)" in line
    assert ("then held back AddPartitionsToTxn, released by answered: hold 1 (held 4 ms)"
            in line)


def test_the_grid_names_the_combination_its_status_and_the_match():
    grid = {"rows": [{"bug": "KAFKA-14402", "kafka": "3.5.2", "client": "kafka-python 3.0.12",
                      "setting": "defaults", "status": "affected", "text": "FAIL 3/3",
                      "match": "yes", "wall_s": [200.0, 220.0, 210.0], "forced": "own",
                      "held": "accepted at 171 (x3)"}], "exit_code": 0}
    head, row, *_ = render_known_bug_grid(grid).splitlines()
    assert head.split()[:5] == ["bug", "kafka", "client", "broker", "setting"]
    assert row.split() == ["KAFKA-14402", "3.5.2", "kafka-python", "3.0.12", "defaults",
                           "affected", "own", "FAIL", "3/3", "yes", "210", "accepted", "at",
                           "171",
                           "(x3)"]


def test_a_release_after_the_marker_says_where_the_marker_was(tmp_path):
    base = {"type": "event", "fault": "hold", "target": {"all": True}, "id": 1}
    marker = {"offset": 170, "marker": "abort", "producer_id": 0, "producer_epoch": 0,
              "topic": "t", "partition": 0}
    _write(tmp_path, [
        {"type": "ok", "f": "start", "fault": "hold", "target": {"all": True}, "id": 1,
         "t": 1, "detail": {"rule": {"id": 3}}},
        {**base, "f": "hold", "t": 2, "detail": {"hold": 1, "request": LATE,
                                                 "client_view": "timeout"}},
        {**base, "f": "trigger", "t": 3, "detail": {"hold": 1, "request": LATE,
                                                    "trigger": {"api": "EndTxn"}}},
        {**base, "f": "marker", "t": 4, "detail": {"hold": 1, "request": LATE,
                                                   "marker": marker, "searched_from": 168}},
        {**base, "f": "release", "t": 4, "detail": {"hold": 1, "request": LATE,
                                                    "reason": "abort marker at offset 170",
                                                    "held_ms": 9000}},
        {**base, "f": "answer", "t": 5, "detail": {"hold": 1, "request": LATE, "response": {
            "partitions": [["t", 0, 0, 171]]}}},
    ])
    assert held_answers(tmp_path) == {"": "accepted at 171 after the abort marker at 170"}
    (line,) = fault_summary(tmp_path)
    assert "released by abort marker at offset 170 (held 9000 ms)" in line


def test_the_grid_gives_each_clusters_set_up_apart():
    grid = {"rows": [], "exit_code": 2, "clusters": [
        {"cluster": "4.1.1+transaction.version=0", "runs": 6, "wall_s": 700.4,
         "runs_s": 600.2, "setup_s": 100.2}]}
    assert ("cluster 4.1.1+transaction.version=0: 700s, of which 6 runs 600s and set-up "
            "and stop 100s") in render_known_bug_grid(grid).splitlines()


def test_late_answers_of_two_versions_of_one_client_stay_apart(tmp_path):
    """java:3.9.1 beside java:4.1.1 (transactional ids ``<run>.transactional-java-3.9.1-0``):
    each version's answers under its own key, as the grid's column key names it."""
    base = {"type": "event", "fault": "hold", "target": {"all": True}, "id": 1}
    ops = []
    for n, (version, code) in enumerate((("3.9.1", 0), ("4.1.1", 90)), start=1):
        end = {"api": "EndTxn", "api_key": 26, "committed": True,
               "transactional_id": f"k-1-s1.transactional-java-{version}-0"}
        ops.append({**base, "f": "answer", "t": n, "detail": {
            "hold": n, "request": end, "response": {"error_code": code}}})
    _write(tmp_path, ops)
    assert held_answers(tmp_path) == {"java-3.9.1": "EndTxn accepted",
                                      "java-4.1.1": "EndTxn refused: ProducerFenced"}
