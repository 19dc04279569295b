"""The KAFKA-14402 row of the known-bugs grid, whole (issue 33): 3.5.2 (affected), 4.1.1
with transaction.partition.verification.enable=false (affected control) and 4.1.1 with its
default (fixed), kafka-python, three runs each (`--repeat 3`): FAIL 3/3, FAIL 3/3, PASS 3/3,
every one matching its documented status (exit 0), with the held requests' answers and, in
every run's nemesis history, the forced order: held, the EndTxn(abort) response passed,
the abort marker seen in partition 0's log, released by it, answered, the producer's next
requests let through only then.

The whole profile (`verifier chaos --profile known-bugs --repeat 3`, the issue's done-when:
every row of KAFKA-14402, KAFKA-17754 and KAFKA-17754 (b) reproduced 3 of 3, KAFKA-17754
(b)'s runs released by the next transaction's AddPartitionsToTxn of partition 0,
KAFKA-17754's copy by a Produce of a transaction meant to abort): three clusters, 27
runs, ~45 minutes on a quiet 2-core machine.

Not part of `make test` (nine runs, two clusters: ~25 minutes on a loaded 2-core machine);
ports and folder from VERIFIER_CHAOS_BASE_PORT and VERIFIER_CHAOS_STATE_DIR (defaults:
30500, .state/chaos-known-bugs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.integration.orchestration.test_known_bug_run import (
    assert_forced_schedule,
    hold_events,
    run_known_bugs,
)
from verifier.rundata.nemesis import read_nemesis

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
BASE_PORT = int(os.environ.get("VERIFIER_CHAOS_BASE_PORT", "30500"))
STATE_DIR = Path(os.environ.get("VERIFIER_CHAOS_STATE_DIR",
                                str(ROOT / ".state" / "chaos-known-bugs")))
REPEAT = 3
OFF = ("4.1.1", "transaction.partition.verification.enable=false")
WANT = {("3.5.2", "defaults"): ("affected", "FAIL"), OFF: ("affected", "FAIL"),
        ("4.1.1", "defaults"): ("fixed", "PASS")}


def check_kafka_14402_grid(grid: dict, said: str = "") -> None:
    """Every combination reproduced its documented status in every run, each run forced
    in the documented order (the late Produce written after the abort marker on the
    affected ones, refused by the verification on the fixed one)."""
    rows = {(r["kafka"], r["setting"]): r for r in grid["rows"]}
    assert set(rows) == set(WANT), rows
    for key, (status, outcome) in WANT.items():
        row = rows[key]
        assert (row["status"], row["outcomes"], row["match"]) == \
            (status, [outcome] * REPEAT, "yes"), (key, row, said)
        assert len(row["runs"]) == REPEAT, row
        for run in row["runs"]:
            assert_forced_schedule(Path(run), accepted=outcome == "FAIL")
        assert_row_evidence(row)
    assert "refused" in rows[("4.1.1", "defaults")]["held"]
    for key in (("3.5.2", "defaults"), OFF):
        assert "after the abort marker at" in rows[key]["held"], rows[key]
    assert grid["exit_code"] == 0, said


@pytest.mark.timeout(3 * 3600)
def test_kafka_14402_fails_on_3_5_2_and_with_the_verification_off_passes_with_it_on(tmp_path):
    done, grid = run_known_bugs(tmp_path / "out", BASE_PORT, STATE_DIR, "--repeat", str(REPEAT),
                                timeout=2 * 3600)
    said = (done.stdout + done.stderr)[-8000:]
    assert grid is not None, said
    check_kafka_14402_grid(grid, said)
    assert done.returncode == 0, said


def _of_client(request: dict, client: str) -> bool:
    """Whether a held request is the generator's of ``client`` (a grid row's label,
    ``java 3.9.1``, or a bare name): its transactional id ends in
    ``transactional-<name>-0``, or ``transactional-<name>-<version>-0`` when two versions
    of a client ran side by side, or ``transactional-0`` when the cluster ran one client
    (the transaction.version=0 cluster: Java only)."""
    tid = str(request.get("transactional_id", ""))
    name, _, version = client.partition(" ")
    ends = [f"transactional-{name}-0", "transactional-0"]
    if version:
        ends.append(f"transactional-{name}-{version}-0")
    return not client or tid.endswith(tuple(ends))


def assert_next_transaction_release(run_dir: Path, accepted: bool,
                                    client: str = "") -> list[dict]:
    """KAFKA-17754 (b)'s order, from the run's nemesis history (``client``'s generator
    when several ran side by side): each late Produce held; armed by the EndTxn response
    of its own transactional id; released by the next AddPartitionsToTxn response without error of
    that id (the next transaction, not a timer nor the heal) when ``accepted``, and the
    broker accepted it (the partition verification passed, the epoch was the same); else
    (the fixed row) refused. Returns the late Produces' answers."""
    events = hold_events(run_dir)
    where = {(op["f"], op["detail"]["hold"]): i for i, op in enumerate(events)}
    late = [op["detail"] for op in events if op["f"] == "hold"
            and op["detail"].get("client_view") == "timeout"
            and _of_client(op["detail"]["request"], client)]
    assert late, f"nothing held: {events}"
    answers = []
    for held in late:
        n, request = held["hold"], held["request"]
        assert request["api"] == "Produce"
        assert any(p["partition"] == 0 for p in request["partitions"])
        answer = events[where[("answer", n)]]["detail"]["response"]
        answers.append(answer)
        release = events[where[("release", n)]]["detail"]
        if not accepted:  # released into the next transaction, refused (issue 45: not
            # at the bound); at transaction version 2 by its first Produce to partition 0
            assert all(error != 0 for _, _, error, _ in answer["partitions"]), answer
            assert release["reason"] in ("AddPartitionsToTxn response",
                                         "Produce response"), release
            continue
        assert where[("hold", n)] < where[("armed", n)] < where[("release", n)] \
            < where[("answer", n)], events
        by = events[where[("armed", n)]]["detail"]["by"]
        assert (by["api"], by["direction"]) == ("EndTxn", "response"), by
        assert by["transactional_id"] == request["transactional_id"], by
        assert release["reason"] == "AddPartitionsToTxn response", release
        assert release["trigger"]["transactional_id"] == request["transactional_id"]
        assert release["trigger"].get("error_code") == 0, release
        # the next transaction's AddPartitionsToTxn that adds the late batch's partition
        assert any(p["partition"] == 0 for p in release["trigger"]["partitions"]), release
    if accepted:  # the batch written (its copies, the retries, may be refused or recognised)
        assert any(error == 0 for a in answers for _, _, error, _ in a["partitions"]), answers
    return answers


def _held(run_dir: Path, client_view: str, client: str) -> tuple[list, dict, list]:
    """The run's hold events, each (event, hold) -> its index, and the holds of
    ``client``'s requests held with ``client_view`` (``copy``, ``timeout``)."""
    events = hold_events(run_dir)
    where = {(op["f"], op["detail"]["hold"]): i for i, op in enumerate(events)}
    held = [op["detail"] for op in events if op["f"] == "hold"
            and op["detail"].get("client_view") == client_view
            and _of_client(op["detail"]["request"], client)]
    return events, where, held


def assert_copy_released_into_an_abort(run_dir: Path, accepted: bool,
                                       client: str = "") -> dict:
    """KAFKA-17754's order, from the run's nemesis history (``client``'s generator when
    several ran side by side): one copy of an EndTxn(commit) held; released by a Produce
    response of the same transactional id whose records say their transaction is meant to
    abort (not a timer nor the heal); answered without error on an affected combination
    (the stale commit ended that transaction), refused on the fixed one. Returns the
    copy's answer."""
    events, where, copies = _held(run_dir, "copy", client)
    assert len(copies) == 1, f"one copy held: {copies}"
    (held,) = copies
    n, request = held["hold"], held["request"]
    assert (request["api"], request.get("committed")) == ("EndTxn", True), request
    assert where[("hold", n)] < where[("release", n)] < where[("answer", n)], events
    release = events[where[("release", n)]]["detail"]
    trigger = release.get("trigger") or {}
    assert release["reason"] == "Produce response", release
    assert (trigger.get("transactional_id"), trigger.get("records_abort")) == \
        (request["transactional_id"], True), release
    answer = events[where[("answer", n)]]["detail"]["response"]
    assert (answer.get("error_code") == 0) == accepted, answer
    return answer


def assert_late_offset_commit(run_dir: Path, accepted: bool, client: str = "") -> dict:
    """KAFKA-15449's order, from the run's nemesis history: one copy of the copier's
    TxnOffsetCommit of a transaction meant to abort held; the Produce answer of a later
    transaction of the copier meant to commit (``trigger``); the abort marker of the held
    request's producer id and epoch seen in the group's ``__consumer_offsets`` partition;
    released by that marker; answered without error on the affected combination, refused
    INVALID_TXN_STATE (48) on the fixed one; the copier's requests held back meanwhile let
    through only after that answer. Returns the copy's answer."""
    events = hold_events(run_dir)
    where = {(op["f"], op["detail"]["hold"]): i for i, op in enumerate(events)}
    copies = [op["detail"] for op in events if op["f"] == "hold"
              and op["detail"].get("client_view") == "copy"]
    assert len(copies) == 1, f"one copy held: {copies}"
    (held,) = copies
    n, request = held["hold"], held["request"]
    assert (request["api"], request.get("records_abort")) == ("TxnOffsetCommit", True), request
    assert ("marker", n) in where, f"no abort marker seen: the copy went unforced {events}"
    assert where[("hold", n)] < where[("trigger", n)] < where[("marker", n)] < \
        where[("release", n)] < where[("answer", n)], events
    trigger = events[where[("trigger", n)]]["detail"]["trigger"]
    assert (trigger["api"], trigger["transactional_id"], trigger.get("records_abort")) == \
        ("Produce", request["transactional_id"], False), trigger
    marker = events[where[("marker", n)]]["detail"]["marker"]
    assert (marker["topic"], marker["marker"], marker["producer_id"],
            marker["producer_epoch"]) == ("__consumer_offsets", "abort",
                                          request["producer_id"], request["producer_epoch"])
    release = events[where[("release", n)]]["detail"]
    assert release["reason"].startswith("abort marker at offset"), release
    answer = events[where[("answer", n)]]["detail"]["response"]
    assert answer.get("error_code") == (0 if accepted else 48), answer
    answered = where[("answer", n)]
    for i, op in enumerate(events):  # the gate's requests went on after the answer only
        if op["f"] == "release" and op["detail"]["hold"] != n:
            assert i > answered, (op, events)
    # the copier killed (and restarted) inside a transaction begun after a commit that
    # followed the copy's answer: it resumes from the group's committed offsets
    kills = [op["detail"] for op in read_nemesis(Path(run_dir) / "nemesis.jsonl")
             if op.get("f") == "start" and op.get("fault") == "producer-kill"
             and op.get("type") == "ok"]
    assert len(kills) == 1 and kills[0]["trigger"] == "copy-committed", kills
    assert kills[0]["copy_answered_ms"] == events[answered]["t"], (kills, events[answered])
    assert kills[0]["txn"] > kills[0]["committed_txn"], kills
    return answer


def assert_marker_copy_into_the_next_transaction(run_dir: Path, accepted: bool,
                                                 client: str = "") -> dict:
    """KAFKA-19446's order, from the run's nemesis history: a copy of the coordinator's
    WriteTxnMarkers(commit) to partition 0's leader held (on the replication path);
    released by the answer without error of a Produce of the same producer id and epoch
    whose records say their transaction is meant to abort (the next transaction, not a
    timer: copies released into one meant to commit go at their 5-s bound, refused on
    both versions, and another copy is held); the leader took it as that transaction's
    marker on the affected row (error 0), refused it on the fixed one
    (INVALID_PRODUCER_EPOCH, 47). Returns that copy's answer."""
    events = hold_events(run_dir)
    where = {(op["f"], op["detail"]["hold"]): i for i, op in enumerate(events)}
    released = [events[where[("release", op["detail"]["hold"])]]["detail"] for op in events
                if op["f"] == "hold" and op["detail"]["request"]["api"] == "WriteTxnMarkers"
                and op["detail"].get("client_view") == "copy"
                and ("release", op["detail"]["hold"]) in where
                and _of_client(op["detail"]["request"], client)]
    forced = [r for r in released if r["reason"] == "Produce response"]
    assert len(forced) == 1, f"one copy released by the next transaction's write: {events}"
    (release,) = forced
    n, request, trigger = release["hold"], release["request"], release["trigger"]
    assert request["committed"] is True, request
    assert where[("hold", n)] < where[("release", n)] < where[("answer", n)], events
    assert (trigger["producer_id"], trigger["producer_epoch"], trigger["records_abort"],
            trigger["error_code"]) == (request["producer_id"], request["producer_epoch"],
                                       True, 0), trigger
    answer = events[where[("answer", n)]]["detail"]["response"]
    errors = {error for _, _, error in answer["markers"]}
    assert errors == ({0} if accepted else {47}), answer
    return answer


def assert_late_batch_after_the_marker(run_dir: Path, accepted: bool,
                                       client: str = "") -> list[dict]:
    """KAFKA-14402's order (``client``'s generator when several ran side by side): each
    late Produce released by the abort marker of its own producer id and epoch, written
    after it where affected, refused where fixed (:func:`assert_forced_schedule`); on the
    schedule at transaction version 2 (``kafka-14402-tv2``: no marker comes to the
    partition) released by the EndTxn(abort) response of its own transactional id and
    refused."""
    events = hold_events(run_dir)
    late = [op["detail"] for op in events if op["f"] == "hold"
            and op["detail"].get("client_view") == "timeout"
            and _of_client(op["detail"]["request"], client)]
    assert late, f"nothing held: {events}"
    if any(held.get("after_marker") for held in late):
        return assert_forced_schedule(run_dir, accepted, lambda r: _of_client(r, client))
    assert not accepted, "the schedule without the marker is the fixed row's only"
    answers = []
    for held in late:
        n, request = held["hold"], held["request"]
        (release,) = [op["detail"] for op in events
                      if op["f"] == "release" and op["detail"]["hold"] == n]
        trigger = release.get("trigger") or {}
        assert release["reason"] == "EndTxn response", release
        assert (trigger.get("transactional_id"), trigger.get("committed")) == \
            (request["transactional_id"], False), release
        (answer,) = [op["detail"]["response"] for op in events
                     if op["f"] == "answer" and op["detail"]["hold"] == n]
        assert all(error != 0 for _, _, error, _ in answer["partitions"]), answer
        answers.append(answer)
    return answers


def assert_own_end_txn_fenced(run_dir: Path, accepted: bool, client: str = "") -> dict:
    """The own-EndTxn row's order: the client's own EndTxn held (a timeout, not a copy);
    released by the next AddPartitionsToTxn response without error of its transactional id
    (not a timer); refused by the coordinator (the client re-initialised: an old epoch)."""
    events, where, held = _held(run_dir, "timeout", client)
    assert len(held) == 1, f"one EndTxn held: {events}"
    n, request = held[0]["hold"], held[0]["request"]
    assert request["api"] == "EndTxn", request
    assert where[("hold", n)] < where[("release", n)] < where[("answer", n)], events
    release = events[where[("release", n)]]["detail"]
    assert release["reason"] == "AddPartitionsToTxn response", release
    assert (release["trigger"]["transactional_id"], release["trigger"].get("error_code")) == \
        (request["transactional_id"], 0), release
    answer = events[where[("answer", n)]]["detail"]["response"]
    assert (answer["error_code"] == 0) == accepted, answer
    return answer


def assert_forged_refusals(run_dir: Path, accepted: bool, client: str = "") -> dict:
    """KAFKA-19479's order, from the run's nemesis history and the generator's history
    (``client``: the grid's label, ``java 4.1.0``): the error answer set for that
    generator's client id fired (its trigger, the first forged answer), MESSAGE_TOO_LARGE
    refused, every Produce of its window (``every = 1``) answered by the proxy; the
    generator committed records after flush() while in flight when ``accepted`` (the
    affected client), none and was told of failed sends (RecordTooLargeException)
    otherwise. Returns the heal's counts."""
    ops = read_nemesis(run_dir / "nemesis.jsonl")
    slug = "-".join(client.split())  # java 4.1.0 -> java-4.1.0
    pid = f"at-least-once-{slug}-0"
    starts = [op["detail"]["rule"] for op in ops if op.get("fault") == "error-answer"
              and op["f"] == "start" and op["type"] == "ok"
              and op["detail"]["rule"]["client_id"] == f"verifier.generator.{pid}"]
    assert len(starts) == 1, ops
    assert (starts[0]["error"], starts[0]["variant"], starts[0]["every"]) == \
        ("MESSAGE_TOO_LARGE", "refuse", 1), starts
    (heal,) = [op["detail"] for op in ops if op.get("fault") == "error-answer"
               and op["f"] == "heal" and op["type"] == "ok"
               and f"verifier.generator.{pid}" in op["detail"]["clients"]]
    assert heal["clients"][f"verifier.generator.{pid}"][1] == heal["hits"] > 0, heal
    lines = [orjson.loads(x) for x in (run_dir / "histories" / f"{pid}.jsonl")
             .read_bytes().splitlines()[1:]]
    in_flight = [x for x in lines if x.get("type") == "ok" and x.get("in_flight")]
    too_large = [x for x in lines if x.get("type") == "fail"
                 and "RecordTooLargeException" in str(x.get("error"))]
    if accepted:
        assert in_flight, f"{pid} committed nothing in flight"
    else:
        assert not in_flight and too_large, (len(in_flight), len(too_large))
    return heal


#: every bug's order check (issue 45: every row of the grid has one)
ORDER_CHECKS = {"KAFKA-14402": assert_late_batch_after_the_marker,
                "KAFKA-17754 (b)": assert_next_transaction_release,
                "KAFKA-17754": assert_copy_released_into_an_abort,
                "KAFKA-17754 (own EndTxn)": assert_own_end_txn_fenced,
                "KAFKA-15449": assert_late_offset_commit,
                "KAFKA-19446": assert_marker_copy_into_the_next_transaction,
                "KAFKA-19479": assert_forged_refusals}


def assert_row_evidence(row: dict) -> None:
    """A row's own evidence, per run (``evidence``, issue 45): an affected run's FAIL
    names at least one forbidden anomaly tied to a forced request released into its
    window; a fixed (fenced) run's PASS names a forced request released into its window
    and the broker's refusal (its error code); copies are said to be copies."""
    assert len(row["evidence"]) == len(row["runs"]), row
    for run, ev in zip(row["runs"], row["evidence"], strict=True):
        assert ev["run"] == run and ev["open"] is None, (row["bug"], ev)
        window = [f for f in ev["forced"] if f["in_window"]]
        assert window, ev
        if row["status"] == "affected":
            assert ev["shows"] and ev["anomalies"], ev
            holds = {f["hold"] for f in window}
            assert all(a["hold"] in holds for a in ev["anomalies"]), ev
        else:
            assert ev["clean"] and any(f["error_codes"] and any(f["error_codes"])
                                       for f in window), ev
    if any(f["copy"] for ev in row["evidence"] for f in ev["forced"]):
        assert "copy" in row["forced"], row


ALL_BUGS = {"KAFKA-14402", "KAFKA-17754", "KAFKA-17754 (own EndTxn)", "KAFKA-17754 (b)",
            "KAFKA-15449", "KAFKA-19446", "KAFKA-19479"}
ALL_CLUSTERS = {"3.5.2", "3.6.2", "4.1.1", "4.1.1+transaction.version=0", "4.2.0", "4.2.2",
                "4.3.1", "4.4.0"}


def check_whole_grid(grid: dict, said: str = "", bugs: set = ALL_BUGS,
                     clusters: set = ALL_CLUSTERS) -> None:
    """The done-when of issues 33 and 45: every row of every bug reproduced its documented
    status in each of the REPEAT runs on its own evidence (exit 0); each cluster's set-up
    is reported apart; every row's runs in its bug's order (:data:`ORDER_CHECKS`, one per
    bug) and with its evidence (:func:`assert_row_evidence`). ``bugs`` and ``clusters``:
    what the grid must hold (a run of some bugs only: ``--scenario``)."""
    assert {r["bug"] for r in grid["rows"]} == bugs, grid["rows"]
    for row in grid["rows"]:
        want = "FAIL" if row["status"] == "affected" else "PASS"
        assert (row["outcomes"], row["match"]) == ([want] * REPEAT, "yes"), (row, said)
    assert grid["exit_code"] == 0, said
    ran = {c["cluster"]: c for c in grid.get("clusters") or []}
    assert set(ran) == clusters, ran
    assert all(c["setup_s"] > 0 and c["runs_s"] > 0 for c in ran.values()), ran
    for row in grid["rows"]:
        check = ORDER_CHECKS[row["bug"]]  # every row has its order check
        for run in row["runs"]:
            check(Path(run), row["status"] == "affected", row["client"])
        assert_row_evidence(row)


@pytest.mark.timeout(4 * 3600)
def test_the_known_bugs_profile_reproduces_every_documented_status_3_of_3(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "verifier", "chaos", "--profile", "known-bugs", "--repeat",
         str(REPEAT), "--base-port", str(BASE_PORT), "--state-dir", str(STATE_DIR),
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=3 * 3600)
    said = (done.stdout + done.stderr)[-8000:]
    grid_path = out / "known-bugs.json"
    assert grid_path.exists(), said
    check_whole_grid(orjson.loads(grid_path.read_bytes()), said)
    assert done.returncode == 0, said


@pytest.mark.timeout(3600)
def test_kafka_19479_commits_unwritten_records_with_kafka_clients_4_1_0_only(tmp_path):
    """Issue 50's done-when for KAFKA-19479: 4.1.0 FAIL 3/3, 4.1.1 PASS 3/3 on the same
    4.1.1 cluster, each run on its own evidence (about 5 minutes)."""
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "verifier", "chaos", "--profile", "known-bugs", "--scenario",
         "kafka-19479", "--repeat", str(REPEAT), "--base-port", str(BASE_PORT),
         "--state-dir", str(STATE_DIR), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800)
    said = (done.stdout + done.stderr)[-8000:]
    assert (out / "known-bugs.json").exists(), said
    check_whole_grid(orjson.loads((out / "known-bugs.json").read_bytes()), said,
                     bugs={"KAFKA-19479"}, clusters={"4.1.1"})
    assert done.returncode == 0, said
