"""A known-bug row matches only on its own evidence (issue 45): hand-built runs (a nemesis
history with the forced request, producer histories, a verdict's anomaly samples) judged
by the grid. An affected row's FAIL counts only with a forbidden anomaly tied to the
forced request; a fixed row's PASS only with the forced request refused inside its
window; a request released at its bound proves nothing."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from verifier.orchestration import known_bugs as kb
from verifier.orchestration.scenario import load_scenario
from verifier.report.forced_evidence import forced_requests, run_evidence, transactions
from verifier.report.known_bugs import render_known_bug_grid

RUN = "kafka-19446-20261129T083042Z-s1"
TID = f"{RUN}.transactional-0"


def _lines(path: Path, header: dict, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [header, *lines]))


def _history(run_dir: Path, txns: list[tuple[int, int, int, bool]]) -> None:
    """transactional-0's history: (txn, begin t, end t, abort) each, on partition 0."""
    lines = []
    for txn, begin, end, abort in txns:
        lines += [{"type": "invoke", "f": "begin", "ses": 1, "txn": txn, "abort": abort,
                   "recs": [[0, txn * 10 + i] for i in range(10)], "t": begin},
                  {"type": "ok", "f": "abort" if abort else "commit", "ses": 1, "txn": txn,
                   "t": end}]
    _lines(run_dir / "histories" / "transactional-0.jsonl",
           {"type": "header", "format": "producer-history", "version": 1, "run": RUN,
            "pid": "transactional-0"}, lines)


def _event(f: str, t: int, hold: int, request: dict, **detail) -> dict:
    return {"type": "event", "f": f, "fault": "hold", "target": {"all": True}, "id": 1,
            "t": t, "detail": {"rule": 1, "hold": hold, "request": request, **detail}}


MARKER = {"api": "WriteTxnMarkers", "api_key": 27, "client_id": "broker-1-txn-marker-sender",
          "transactional_id": TID, "producer_id": 0, "producer_epoch": 21, "committed": True,
          "partitions": [{"topic": f"{RUN}.transactional", "partition": 0}]}
TRIGGER = {"direction": "response", "api": "Produce", "transactional_id": TID,
           "producer_id": 0, "producer_epoch": 21, "records_abort": True, "error_code": 0}


def _marker_copy(run_dir: Path, reason: str, error: int, hold: int = 1) -> list[dict]:
    """A copy of the coordinator's WriteTxnMarkers held at 1000, released at 1100 (by
    ``reason``: an event, or its bound), answered at 1110 with ``error``."""
    released = {"reason": reason, "delivered": True}
    if not reason.startswith("after "):
        released["trigger"] = TRIGGER
    return [_event("hold", 1000, hold, MARKER, client_view="copy"),
            _event("release", 1100, hold, MARKER, **released),
            _event("answer", 1110, hold, MARKER, to_client=False,
                   response={"error_code": error,
                             "markers": [[f"{RUN}.transactional", 0, error]]})]


def _run(tmp_path: Path, name: str, events: list[dict]) -> Path:
    run_dir = tmp_path / name
    _lines(run_dir / "nemesis.jsonl",
           {"type": "header", "format": "nemesis-history", "version": 1, "run": RUN}, events)
    # transaction 20 committed before the copy; 21 (meant to abort) open when it acted
    _history(run_dir, [(20, 800, 950, False), (21, 960, 1300, True)])
    return run_dir


def _aborted_read(txn: int, offset: int) -> dict:
    return {"kind": "aborted-read", "topic": f"{RUN}.transactional", "partition": 0,
            "isolation": "read_committed", "pid": "transactional-0", "ses": 1, "seq": offset,
            "txn": txn, "offset": offset, "offsets": [offset]}


def _doc(run_dir: Path, verdict: str, anomalies: list[dict]) -> dict:
    col = {"name": "transactional@read_committed", "mode": "transactional",
           "verdict": verdict,
           "anomalies": {"aborted-read": {"count": len(anomalies), "expectation": "forbidden",
                                          "sample": anomalies}}}
    return {"scenario": "kafka-19446", "run": RUN, "clients": ["java 4.1.1"],
            "columns": [col], "run_dir": str(run_dir), "phases": {"total_s": 80.0}}


def _grid(docs_by_version: dict[str, list[dict]]) -> dict:
    plans = kb.plan_known_bugs(kb.load_known_bugs(),
                               {"kafka-19446": load_scenario("kafka-19446")})
    return kb.known_bug_grid(plans, docs_by_version)


def _row(grid: dict, kafka: str) -> dict:
    (row,) = [r for r in grid["rows"] if r["kafka"] == kafka]
    return row


def test_an_affected_fail_tied_to_the_copy_matches_and_says_which_anomalies(tmp_path):
    run = _run(tmp_path, "a", _marker_copy(tmp_path, "Produce response", 0))
    grid = _grid({"4.1.1": [_doc(run, "FAIL", [_aborted_read(21, 223)])]})
    row = _row(grid, "4.1.1")
    assert (row["match"], row["forced"]) == ("yes", "copy")
    (ev,) = row["evidence"]
    assert ev["shows"] and ev["open"] is None
    assert [(a["txn"], a["offset"], a["hold"]) for a in ev["anomalies"]] == [(21, 223, 1)]
    assert ev["forced"][0]["answer"] == "accepted" and ev["forced"][0]["in_window"]
    text = render_known_bug_grid(grid)
    assert "copy" in text and "tied: 1 aborted-read (transaction 21" in text


def test_an_affected_fail_on_another_transaction_is_open(tmp_path):
    """The anomaly is transaction 20's, committed before the copy acted: not the copy's."""
    run = _run(tmp_path, "a", _marker_copy(tmp_path, "Produce response", 0))
    row = _row(_grid({"4.1.1": [_doc(run, "FAIL", [_aborted_read(20, 205)])]}), "4.1.1")
    assert row["match"] == "open"
    assert "no forbidden anomaly is tied" in row["evidence"][0]["open"]


def test_an_affected_fail_whose_copy_went_at_its_bound_is_open(tmp_path):
    run = _run(tmp_path, "a", _marker_copy(tmp_path, "after 5000 ms", 0))
    row = _row(_grid({"4.1.1": [_doc(run, "FAIL", [_aborted_read(21, 223)])]}), "4.1.1")
    assert row["match"] == "open"
    assert "at its bound (after 5000 ms), not into the event" in row["evidence"][0]["open"]


def test_a_fixed_pass_shows_the_copy_in_its_window_and_the_refusal(tmp_path):
    run = _run(tmp_path, "f", _marker_copy(tmp_path, "Produce response", 47))
    grid = _grid({"4.2.0": [_doc(run, "PASS", [])]})
    row = _row(grid, "4.2.0")
    assert row["match"] == "yes"
    (ev,) = row["evidence"]
    (forced,) = ev["forced"]
    assert (forced["api"], forced["copy"], forced["in_window"], forced["error_codes"]) == \
        ("WriteTxnMarkers", True, True, [47])
    assert forced["answer"] == "refused: InvalidProducerEpoch" and ev["clean"]
    assert "released by Produce response: refused: InvalidProducerEpoch" in \
        render_known_bug_grid(grid)


def test_a_fixed_pass_whose_copy_went_at_its_bound_is_open_not_as_documented(tmp_path):
    """Issue 45: every copy released stale at its 5-s bound (refused, as a stale marker
    is on any version): the window never happened, the PASS says nothing."""
    events = _marker_copy(tmp_path, "after 5000 ms", 47) + \
        _marker_copy(tmp_path, "after 5000 ms", 47, hold=2)
    row = _row(_grid({"4.2.0": [_doc(_run(tmp_path, "f", events), "PASS", [])]}), "4.2.0")
    assert row["match"] == "open"
    assert "not into the event" in row["evidence"][0]["open"]
    assert _grid({"4.2.0": [_doc(_run(tmp_path, "g", events), "PASS", [])]})["exit_code"] == 2


def test_a_fixed_pass_whose_copy_the_broker_took_is_open(tmp_path):
    run = _run(tmp_path, "f", _marker_copy(tmp_path, "Produce response", 0))
    row = _row(_grid({"4.2.0": [_doc(run, "PASS", [])]}), "4.2.0")
    assert row["match"] == "open"
    assert "refused no forced request" in row["evidence"][0]["open"]


def test_an_affected_pass_is_a_mismatch_only_when_the_copy_went_into_its_window(tmp_path):
    took = _run(tmp_path, "a", _marker_copy(tmp_path, "Produce response", 0))
    assert _row(_grid({"4.1.1": [_doc(took, "PASS", [])]}), "4.1.1")["match"] == "NO"
    stale = _run(tmp_path, "b", _marker_copy(tmp_path, "after 5000 ms", 0))
    assert _row(_grid({"4.1.1": [_doc(stale, "PASS", [])]}), "4.1.1")["match"] == "open"


def test_a_late_produce_ties_the_records_it_wrote(tmp_path):
    """KAFKA-14402's kind: the late batch (3 records) accepted at 40; the duplicate at
    41 is one of its records, the one at 45 is not."""
    produce = {"api": "Produce", "transactional_id": TID, "producer_id": 3,
               "producer_epoch": 0,
               "partitions": [{"topic": "t", "partition": 0, "base_sequence": 7, "records": 3}]}
    ops = [_event("hold", 1000, 1, produce, client_view="timeout"),
           _event("release", 1100, 1, produce, reason="abort marker at offset 39",
                  delivered=True, trigger={"api": "EndTxn"}),
           _event("answer", 1110, 1, produce, to_client=True,
                  response={"partitions": [["t", 0, 0, 40]]})]
    dup = {"kind": "duplicate-cross-session", "partition": 0, "offset": 12,
           "offsets": [12, 41], "pid": "transactional-0"}
    other = {**dup, "offsets": [12, 45]}
    forced = forced_requests(ops)
    ev = run_evidence("affected", "FAIL", forced, [dup, other], lambda t: "transactional-0",
                      lambda pid: [])
    assert [a["offset"] for a in ev["anomalies"]] == [12] and len(ev["anomalies"]) == 1
    assert "records at 0@40-42" in ev["anomalies"][0]["by"]
    assert forced[0]["copy"] is False  # the client's own request: "own"


def test_a_late_offset_commit_ties_the_input_its_transaction_had_planned():
    """KAFKA-15449's kind: the copy held when the copier's transaction 21 sent its
    offsets; the lost input records 210 (planned by 21) is tied, 300 is not."""
    commit = {"api": "TxnOffsetCommit", "transactional_id": TID, "producer_id": 3,
              "producer_epoch": 0, "records_abort": True}
    ops = [_event("hold", 1000, 1, commit, client_view="copy"),
           _event("release", 1500, 1, commit, reason="abort marker at offset 9",
                  delivered=True, trigger={"api": "Produce"}),
           _event("answer", 1510, 1, commit, to_client=False, response={"error_code": 0})]
    history = [{"type": "invoke", "f": "begin", "ses": 1, "txn": 21, "abort": True,
                "recs": [[0, 210], [0, 211]], "t": 960},
               {"type": "ok", "f": "abort", "ses": 1, "txn": 21, "t": 1200}]
    lost = [{"kind": "lost", "partition": 0, "offset": o, "pid": "input-0"} for o in (210, 300)]
    ev = run_evidence("affected", "FAIL", forced_requests(ops), lost, lambda t: "copier-0",
                      lambda pid: transactions(history))
    assert [a["offset"] for a in ev["anomalies"]] == [210]


@pytest.mark.parametrize("status, outcome, open_", [
    ("affected", "FAIL", False),
    # a fenced row's PASS whose copy the coordinator took: not the refusal it needs
    ("fenced", "PASS", True)])
def test_an_end_txn_copy_ties_the_transaction_it_ended(status, outcome, open_):
    end_txn = {"api": "EndTxn", "transactional_id": TID, "producer_id": 3,
               "producer_epoch": 0, "committed": True}
    ops = [_event("hold", 900, 1, end_txn, client_view="copy"),
           _event("release", 1100, 1, end_txn, reason="Produce response", delivered=True,
                  trigger=TRIGGER),
           _event("answer", 1110, 1, end_txn, to_client=False, response={"error_code": 0})]
    history = [{"type": "invoke", "f": "begin", "ses": 1, "txn": 21, "t": 960},
               {"type": "ok", "f": "abort", "ses": 1, "txn": 21, "t": 1300}]
    ev = run_evidence(status, outcome, forced_requests(ops),
                      [_aborted_read(21, 223), _aborted_read(22, 240)],
                      lambda t: "transactional-0", lambda pid: transactions(history))
    assert [a["txn"] for a in ev["anomalies"]] == [21]
    assert (ev["open"] is not None) == open_, ev["open"]


def test_a_late_produce_ties_its_records_by_identity_in_a_redone_transaction():
    """Seen on 4.1.1 at transaction version 0 with the verification off (2026-11-29): the
    late batch (held at 1500 in transaction 15, seq 150-159 of partition 0) was written at
    166-175 and its transaction redone under the same number; the duplicate anomalies name
    the redone copies' offsets (176..), so only the records' identity ties them. Its two
    retries, released with it, tie the same anomalies once."""
    produce = {"api": "Produce", "transactional_id": TID, "producer_id": 0,
               "producer_epoch": 0,
               "partitions": [{"topic": "t", "partition": 0, "base_sequence": 150,
                               "records": 10}]}
    ops = []
    for hold in (1, 2):
        ops += [_event("hold", 1500 + hold, hold, produce, client_view="timeout"),
                _event("release", 9000, hold, produce, reason="abort marker at offset 165",
                       delivered=True, trigger={"api": "EndTxn"}),
                _event("answer", 9010, hold, produce, to_client=True,
                       response={"partitions": [["t", 0, 0, 166]]})]
    history = [
        {"type": "invoke", "f": "begin", "ses": 1, "txn": 14, "t": 1100,
         "recs": [[0, q] for q in range(140, 150)]},
        {"type": "ok", "f": "commit", "ses": 1, "txn": 14, "t": 1400},
        {"type": "invoke", "f": "begin", "ses": 1, "txn": 15, "t": 1430,
         "recs": [[0, q] for q in range(150, 160)]},
        {"type": "ok", "f": "abort", "ses": 1, "txn": 15, "t": 8500},
        {"type": "invoke", "f": "begin", "ses": 1, "txn": 15, "t": 8600,
         "recs": [[0, q] for q in range(150, 160)]},
        {"type": "ok", "f": "commit", "ses": 1, "txn": 15, "t": 12000}]
    dups = [{"kind": "duplicate-same-session", "partition": 0, "offset": 176 + i,
             "offsets": [176 + i], "pid": "transactional-0", "seq": 150 + i, "txn": 15}
            for i in range(10)]
    other = {**dups[0], "offset": 150, "offsets": [150], "seq": 140}  # transaction 14's
    ev = run_evidence("affected", "FAIL", forced_requests(ops), [*dups, other],
                      lambda t: "transactional-0", lambda pid: transactions(history))
    assert [a["seq"] for a in ev["anomalies"]] == list(range(150, 160)), ev["anomalies"]
    assert ev["open"] is None
    assert "transaction 15 of transactional-0" in ev["anomalies"][0]["by"]
