"""A known-bug row forced by a kill (KAFKA-20685): the kill inside a transaction, its
restart's store read from the instance's log, and the row's reading of a run."""

from __future__ import annotations

from verifier.orchestration import known_bugs as kb
from verifier.report.forced_evidence import forced_by, run_evidence
from verifier.report.kill_evidence import attach_restarts, killed_in_transaction, restarts

PROCESS = "app/streams-count-eos-flush/0"


def _kill(t: int, in_transaction: bool) -> dict:
    return {"type": "ok", "f": "start", "fault": "instance-kill", "id": t, "t": t,
            "detail": {"killed": [{"process": PROCESS, "trigger": "at-risk", "state": {
                "in_transaction": in_transaction, "at_risk": 7000}}]}}


def _log(*starts: str) -> str:
    return "".join(f"--- 2026-11-30T01:28:{i:02d} start #{i + 1}: java -jar app.jar\n{body}"
                   for i, body in enumerate(starts))


# the lines as kafka-streams 4.1.2 logs them (a run of 2026-11-30 01:28)
KEPT = ("5304 [StreamThread-1] INFO ProcessorStateManager - stream-thread [x] task [1_0] "
        "State store counts initialized from checkpoint with offset 11706 at changelog "
        "x-counts-changelog-0\n")
OPENED = KEPT.replace("11706", "null")
WIPED = ("629 [StreamThread-1] WARN StreamThread - Detected the states of tasks [1_0] are "
         "corrupted. org.apache.kafka.streams.errors.TaskCorruptedException: Tasks [1_0] are "
         "corrupted and hence need to be re-initialized\n")
OVER = [{"kind": "duplicate-delivery", "reader": "app:streams-count-eos-flush",
         "row": {"key": "k1", "value": "2"}}]


def test_restarts_reads_each_start_of_the_process_apart():
    got = restarts(_log("started\n", OPENED, KEPT + "more\n", WIPED))
    assert [(r["kept"], r["opened"], r["wiped"]) for r in got] == [
        ([], False, False), ([], True, False), ([11706], False, False), ([], False, True)]


def test_a_kill_is_in_its_window_only_inside_a_transaction_and_gets_its_restart(tmp_path):
    (tmp_path / "app-streams-count-eos-flush-0.log").write_text(_log("s\n", OPENED, KEPT))
    kills = killed_in_transaction([_kill(1, True), {"type": "invoke", "f": "start",
                                                    "fault": "instance-kill"}, _kill(2, False)])
    attach_restarts(kills, tmp_path)
    assert [(k["in_window"], k["start"], k["restart"]["kept"]) for k in kills] == [
        (True, 1, []), (False, 2, [11706])]


def _evidence(status, outcome, restart_body, anomalies, in_transaction=True, tmp_path=None):
    (tmp_path / "app-streams-count-eos-flush-0.log").write_text(_log("s\n", restart_body))
    kills = killed_in_transaction([_kill(1, in_transaction)])
    attach_restarts(kills, tmp_path)
    return run_evidence(status, outcome, kills, anomalies, str, lambda _: [])


def test_an_affected_fail_after_a_kill_whose_restart_kept_its_store_matches(tmp_path):
    ev = _evidence("affected", "FAIL", KEPT, OVER, tmp_path=tmp_path)
    assert ev["shows"] and not ev["open"]
    assert "kept its store at checkpoint offset 11706" in ev["anomalies"][0]["by"]
    assert kb.run_reading("affected", "FAIL", ev) == kb.MATCH
    assert forced_by([ev]) == "kill"


def test_an_affected_fail_whose_restart_wiped_is_open(tmp_path):
    ev = _evidence("affected", "FAIL", WIPED, OVER, tmp_path=tmp_path)
    assert not ev["shows"] and "FAIL, but no forbidden anomaly" in ev["open"]
    assert kb.run_reading("affected", "FAIL", ev) == kb.OPEN


def test_a_fixed_pass_is_clean_when_the_restart_after_the_kill_wiped(tmp_path):
    ev = _evidence("fixed", "PASS", WIPED, [], tmp_path=tmp_path)
    assert ev["clean"] and not ev["open"]
    assert kb.run_reading("fixed", "PASS", ev) == kb.MATCH


def test_a_fixed_pass_whose_kill_came_outside_a_transaction_is_open(tmp_path):
    ev = _evidence("fixed", "PASS", WIPED, [], in_transaction=False, tmp_path=tmp_path)
    assert ev["open"] and kb.run_reading("fixed", "PASS", ev) == kb.OPEN


def test_a_fixed_pass_whose_restart_kept_its_store_is_open(tmp_path):
    ev = _evidence("fixed", "PASS", KEPT, [], tmp_path=tmp_path)
    assert not ev["clean"] and kb.run_reading("fixed", "PASS", ev) == kb.OPEN
