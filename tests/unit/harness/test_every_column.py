"""The ``every-column`` trigger of an observer kill (verifier.harness.faults.probes): the
kill waits until the observer's batches in flight hold records of every producer column,
the transactional ones at their own isolation level included. On a timer, the full
profile's observer-kill left both transactional columns NOT EXERCISED in 2 runs of 2
("records of 1 batch(es) planned and not committed at the kill": none of theirs)."""

from __future__ import annotations

import json

import pytest

from verifier.harness.faults import probes as P
from verifier.harness.faults import triggers as T
from verifier.harness.faults.spec import parse_spec
from verifier.orchestration.scenario import load_scenario

RC, RU = "read_committed", "read_uncommitted"
NEEDS = [("idempotent", ("t-idem",), (RC, RU)),
         ("transactional@read_committed", ("t-txn",), (RC,)),
         ("transactional@read_uncommitted", ("t-txn",), (RU,))]


def test_a_column_is_covered_by_a_batch_at_one_of_its_isolation_levels():
    both = {("t-idem", 0): (10, 20), ("t-txn", 1): (5, 9)}
    assert P.uncovered({RC: both, RU: both}, NEEDS) == []
    # read_committed's batch reads the idempotent topic only (the transaction still open):
    # the transactional column read at read_committed is not exercised by a kill now
    assert P.uncovered({RC: {("t-idem", 0): (10, 20), ("t-txn", 1): (5, 5)}, RU: both},
                       NEEDS) == ["transactional@read_committed"]
    # no batch in flight at read_uncommitted: the idempotent column still has read_committed's
    assert P.uncovered({RC: both, RU: None}, NEEDS) == ["transactional@read_uncommitted"]
    assert P.uncovered({}, NEEDS) == [name for name, _, _ in NEEDS]


def _entry(root, batch, ends, committed=False):
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "offsets" / str(batch)).write_text(
        "v1\n" + json.dumps({"batchTimestampMs": 1}) + "\n" + json.dumps(ends))
    if committed:
        (root / "commits").mkdir(exist_ok=True)
        (root / "commits" / str(batch)).write_text("v1\n{}")


def test_the_batch_in_flight_reads_from_the_previous_batch_end(tmp_path):
    cp = tmp_path / "cp"
    assert P.batch_in_flight(cp) is None  # no checkpoint yet
    _entry(cp, 0, {"t-idem": {"0": 10}}, committed=True)
    assert P.batch_in_flight(cp) is None  # its latest batch is committed
    _entry(cp, 1, {"t-idem": {"0": 20}, "t-txn": {"1": 9}})
    assert P.batch_in_flight(cp) == (1, {("t-idem", 0): (10, 20), ("t-txn", 1): (0, 9)})
    (cp / "offsets" / "2").write_text("v1\n{")  # being written: not known yet
    assert P.batch_in_flight(cp) is None


def test_the_probe_reads_the_observers_checkpoints(tmp_path):
    class Observer:
        name, alive = "observer", True
        checkpoints = {RC: tmp_path / RC, RU: tmp_path / RU}

        def column_needs(self):
            return NEEDS

    for iso in (RC, RU):
        _entry(tmp_path / iso, 0, {"t-idem": {"0": 10}, "t-txn": {"1": 4}}, committed=True)
    _entry(tmp_path / RU, 1, {"t-idem": {"0": 20}, "t-txn": {"1": 9}})
    _entry(tmp_path / RC, 1, {"t-idem": {"0": 20}, "t-txn": {"1": 4}})  # txn still open
    found, why = P.probe_every_column(Observer())
    assert found is None and why == ("no batch in flight holds records of "
                                     "transactional@read_committed")
    _entry(tmp_path / RC, 1, {"t-idem": {"0": 20}, "t-txn": {"1": 6}})  # it committed
    found, _ = P.probe_every_column(Observer())
    assert found == {"batch_in_flight": True, "batches": {RC: 1, RU: 1}}
    Observer.alive = False
    assert P.probe_every_column(Observer())[0] is None


def test_an_observer_kill_takes_the_trigger():
    spec = parse_spec({"kind": "observer-kill", "target": {"process": "observer"},
                       "start": 5, "duration": 3, "params": {"trigger": "every-column"}}, "f")
    assert T.trigger_of(spec.kind, spec.params, 3).within_s == 60.0


@pytest.mark.parametrize("scenario", ["observer-kill", "combined"])
def test_the_presets_observer_kills_wait_for_every_column(scenario):
    kills = [f for f in load_scenario(scenario).faults if f["kind"] == "observer-kill"]
    assert kills and all(f["params"].get("trigger") == "every-column" for f in kills)
