"""The verdict's note on the calls an application's instances gave up waiting for
(verifier.judge.app_gave_up): read from the state files' ``errors`` entries that carry
``call`` and ``waited_s``, none from the other errors."""

from __future__ import annotations

from verifier.judge.app_gave_up import gave_up, note

T0 = 1_795_989_089.0  # 2026-11-29 21:51:29 UTC


def test_only_the_calls_given_up_in_time_order_across_instances():
    states = {
        0: {"errors": [{"type": "CommitFailedError", "message": "x", "t": T0 - 50},
                       {"type": "CommitGaveUp", "call": "commit_transaction",
                        "waited_s": 60.0, "t": T0 + 5}]},
        1: {"errors": [{"type": "CommitGaveUp", "call": "send_offsets_to_transaction",
                        "waited_s": 60.1, "t": T0}, "not a dict"]},
        2: {},
    }
    items = gave_up(states)
    assert [(g["instance"], g["call"]) for g in items] == [
        (1, "send_offsets_to_transaction"), (0, "commit_transaction")]
    said = note("copier-transactional", items)
    assert said == ("app copier-transactional: an instance gave up waiting for a call 2 "
                    "time(s) and started over: instance 1 send_offsets_to_transaction after "
                    "60.1 s at 21:51:29 UTC; instance 0 commit_transaction after 60.0 s at "
                    "21:51:34 UTC")


def test_no_note_without_a_call_given_up():
    states = {0: {"errors": [{"type": "CommitFailedError", "message": "fenced", "t": T0}]},
              1: {"errors": None}}
    assert gave_up(states) == []
    assert note("copier-transactional", []) is None
