"""What each preset sink promises under Spark's failures (verifier.judge.expectations
SINK_PROMISES) against what each preset claims (streaming.pipelines.presets)."""

from __future__ import annotations

from streaming.pipelines.presets import PRESETS
from verifier.judge.expectations import (
    DRIVER_KILL,
    EXECUTOR_KILL,
    SINK_PROMISES,
    TABLE,
    sink_promise,
)

STRENGTH = {"at-least-once": 0, "exactly-once": 1}


def test_every_preset_states_its_promise_under_each_failure():
    assert set(SINK_PROMISES) == set(PRESETS)
    for preset, promises in SINK_PROMISES.items():
        assert set(promises) == {DRIVER_KILL, EXECUTOR_KILL}, preset
        for promise in promises.values():
            assert (f"pipeline/{promise}", "read_committed") in TABLE  # a row judges it


def test_each_preset_claims_the_weakest_of_its_promises():
    for preset, promises in SINK_PROMISES.items():
        weakest = min(promises.values(), key=STRENGTH.__getitem__)
        assert PRESETS[preset].GUARANTEE == weakest, preset


def test_only_kafkas_sink_writes_again_when_an_executor_is_lost():
    at_least = [p for p in SINK_PROMISES if sink_promise(p, EXECUTOR_KILL) == "at-least-once"]
    assert at_least == ["kafka-sink"]
