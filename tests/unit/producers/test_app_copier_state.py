"""The kafka-python copier's state file per batch (producers.app_copier): what is on disk
at each step, for the at-risk trigger and the exposure, and how few writes a batch costs
(each replaces the file whole: 0.25-0.7 ms on ext4 here; docs/benchmarks.md 2026-11-30)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from producers.app_copier import State, opening_step, process
from verifier.harness.faults.kinds.application import probe_at_risk


def on_disk(path) -> dict:
    return json.loads(path.read_text())


def trigger_sees(path) -> dict | None:
    """What the instance-kill trigger would act on now (None: it waits)."""
    return probe_at_risk(SimpleNamespace(alive=True, state_file=path, name="app/c/0"))[0]


def test_a_batch_end_is_written_with_the_next_write_and_the_trigger_waits_meanwhile(
        tmp_path):
    path = tmp_path / "0.state.json"
    state = State(str(path), "0", "before")
    state.update(at_risk=200, step="processing")
    assert trigger_sees(path) is not None  # the window: a kill now loses the batch
    state.update(step="writing")
    state.update(at_risk=0, written=200, batches=1, step="", later=True)
    # not on disk yet: the file still says the second step, which the trigger waits past
    assert on_disk(path)["step"] == "writing" and on_disk(path)["batches"] == 0
    assert trigger_sees(path) is None
    # the next batch's window carries it
    state.update(at_risk=150, step="processing")
    doc = on_disk(path)
    assert (doc["at_risk"], doc["written"], doc["batches"]) == (150, 200, 1)
    # or an empty poll's flush, once
    state.update(at_risk=0, written=350, batches=2, step="", later=True)
    state.flush()
    assert (on_disk(path)["at_risk"], on_disk(path)["batches"]) == (0, 2)
    assert state.unsaid is False


def test_without_processing_time_the_window_opens_in_the_second_step(tmp_path):
    # one write a batch (the window), not two: there is no sleep between the steps for a
    # trigger to hit, so the file never says "processing"
    for strategy, second in (("before", "writing"), ("after", "committing"),
                             ("transactional", "committing")):
        path = tmp_path / f"{strategy}.state.json"
        state = State(str(path), "0", strategy)
        state.update(at_risk=200, step=opening_step(strategy, 0))
        written = path.read_text()
        process(state, strategy, 0)
        assert path.read_text() == written  # nothing more written
        assert on_disk(path)["step"] == second and trigger_sees(path) is None
    # with processing time (every chaos run: 200 ms by default) the window is visible,
    # then the second step is said when the sleep ends
    path = tmp_path / "p.state.json"
    state = State(str(path), "0", "before")
    state.update(at_risk=200, step=opening_step("before", 1))
    assert on_disk(path)["step"] == "processing" and trigger_sees(path) is not None
    process(state, "before", 1)
    assert on_disk(path)["step"] == "writing" and trigger_sees(path) is None
