"""KAFKA-14402 forced on a real broker (issue 33): `verifier chaos --profile known-bugs`
on Kafka 3.5.2 with kafka-python, one short run. The late Produce is accepted after its
transaction's abort marker (3.5.2 has no partition verification), the producer's next
transaction commits it, read_committed sees duplicates: FAIL, the documented status
(affected), so the grid matches and exits 0. The schedule's order is read from the run's
nemesis history (docs/formats.md §3): the Produce held, the EndTxn(abort) response passed,
the abort marker seen in partition 0's log, the release by that marker, the broker's
answer, and any next request of the producer held back until that answer.

The 4.1.1 pair (verification off: FAIL; on: PASS) is in tests/chaos/test_known_bugs.py:
the three runs together take longer than this tier's budget on a loaded 2-core machine.
Ports: slot "known-bugs" of tests/conftest.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import TEST_STATE_DIR, port_base
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.nemesis import read_nemesis

#: a whole `verifier chaos` run of its own (issue 39): in the chaos tier, `make test-runs`
#: (CI's step after `make test`), not in `make test`
pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def run_known_bugs(out: Path, base_port: int, state_dir: Path, *flags: str,
                   timeout: float = 2400):
    """``verifier chaos --profile known-bugs --scenario kafka-14402 --clients
    kafka-python`` with ``flags``; returns the process and known-bugs.json."""
    done = subprocess.run(
        [sys.executable, "-m", "verifier", "chaos", "--profile", "known-bugs",
         "--scenario", "kafka-14402", "--clients", "kafka-python", *flags,
         "--base-port", str(base_port), "--state-dir", str(state_dir), "--out", str(out)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout)
    grid_path = out / "known-bugs.json"
    grid = orjson.loads(grid_path.read_bytes()) if grid_path.exists() else None
    return done, grid


def hold_events(run_dir: Path) -> list[dict]:
    """The hold fault's events of a run, in the order the proxy numbered them (the
    nemesis copies them in that order)."""
    return [op for op in read_nemesis(Path(run_dir) / "nemesis.jsonl")
            if op.get("type") == "event" and op.get("fault") == "hold"]


def assert_forced_schedule(run_dir: Path, accepted: bool, mine=None) -> list[dict]:
    """The schedule's order, from the run's nemesis history: each late Produce held; the
    EndTxn(abort) response of its transactional id passed (``trigger``); the abort marker
    of its producer id and epoch seen in partition 0's log (``marker``); released by that
    marker, not by a timer or the heal; answered (``accepted``: written after the marker,
    else refused); and any next request of the producer held back from the trigger on
    went on only after every late answer. ``mine(request)``: only that client's requests
    (several clients side by side). Returns the late Produces' answers."""
    events = hold_events(run_dir)
    where = {(op["f"], op["detail"]["hold"]): i for i, op in enumerate(events)}
    late = [op["detail"] for op in events if op["f"] == "hold"
            and op["detail"].get("client_view") == "timeout"
            and (mine is None or mine(op["detail"]["request"]))]
    assert late, f"nothing held: {events}"
    txn = late[0]["request"]["transactional_id"]
    answers, answered_at, triggered_at = [], [], []
    for held in late:
        n, request = held["hold"], held["request"]
        assert request["api"] == "Produce" and request["transactional_id"] == txn
        assert any(p["partition"] == 0 for p in request["partitions"])
        for step in ("trigger", "marker", "release", "answer"):
            assert (step, n) in where, (step, n, events)
        assert where[("hold", n)] < where[("trigger", n)] < where[("marker", n)] \
            < where[("release", n)] < where[("answer", n)], events
        trigger = events[where[("trigger", n)]]["detail"]["trigger"]
        # the protocol event: the EndTxn(abort) response of its own transactional id
        assert (trigger["api"], trigger["direction"]) == ("EndTxn", "response"), trigger
        assert trigger["transactional_id"] == txn and trigger["committed"] is False
        marker = events[where[("marker", n)]]["detail"]
        m = marker["marker"]
        # the abort marker of the held batch's own producer id and epoch, in partition 0,
        # written after the hold (at or past the high watermark read then)
        assert (m["marker"], m["partition"]) == ("abort", 0), m
        assert (m["producer_id"], m["producer_epoch"]) == \
            (request["producer_id"], request["producer_epoch"]), (m, request)
        assert m["offset"] >= marker["searched_from"], marker
        release = events[where[("release", n)]]["detail"]
        assert release["reason"] == f"abort marker at offset {m['offset']}", release
        assert release["delivered"] is True, release
        answer = events[where[("answer", n)]]["detail"]["response"]
        answers.append(answer)
        for _, _, error, offset in answer["partitions"]:
            if accepted:  # written after the marker: outside the transaction it belonged to
                assert error == 0 and offset > m["offset"], (answer, m)
            else:
                assert error != 0, answer
        answered_at.append(where[("answer", n)])
        triggered_at.append(where[("trigger", n)])
    for op in events:  # the next requests then_hold kept: let through after every answer
        d = op["detail"]
        if op["f"] != "hold" or d.get("client_view") != "delay" or \
                (mine is not None and not mine(d["request"])):
            continue
        assert d["request"]["transactional_id"] == txn
        assert d["request"]["api"] in ("AddPartitionsToTxn", "Produce", "InitProducerId")
        assert where[("hold", d["hold"])] > min(triggered_at)
        release = events[where[("release", d["hold"])]]["detail"]
        assert release["reason"].startswith("answered: hold "), release
        assert where[("release", d["hold"])] > max(answered_at), events
    return answers


def test_kafka_14402_on_3_5_2_fails_as_documented(tmp_path):
    out = tmp_path / "out"
    done, grid = run_known_bugs(out, port_base("known-bugs"),
                                TEST_STATE_DIR.with_name(TEST_STATE_DIR.name + "-known-bugs"),
                                "--kafka-versions", "3.5.2")
    said = (done.stdout + done.stderr)[-6000:]
    assert grid is not None, said
    (row,) = grid["rows"]
    assert (row["bug"], row["kafka"], row["status"]) == ("KAFKA-14402", "3.5.2", "affected")
    assert row["outcomes"] == ["FAIL"] and row["match"] == "yes", said
    assert done.returncode == 0, said  # the affected combination FAILed, as documented
    assert "after the abort marker at" in row["held"], row
    assert "KAFKA-14402  3.5.2" in done.stdout
    assert_forced_schedule(Path(row["runs"][0]), accepted=True)
