"""The proxy's rule decisions, without sockets."""

from __future__ import annotations

import pytest

from verifier.harness.faults.rules import RuleError, RuleSet
from verifier.harness.kafka_wire import API_METADATA, API_PRODUCE


def _decisions(rules: RuleSet, n: int, broker: int = 1, api_key: int = API_PRODUCE):
    return [rules.response_action(broker, api_key) is not None for _ in range(n)]


def test_next_n_drops_exactly_n_produce_responses():
    rules = RuleSet()
    rule = rules.add({"kind": "drop_response", "next": 2})
    assert _decisions(rules, 2, api_key=API_METADATA) == [False, False]  # other APIs pass
    assert _decisions(rules, 5) == [True, True, False, False, False]
    assert (rule.matched, rule.hits) == (5, 2)


def test_every_k_and_limit():
    rules = RuleSet()
    rules.add({"kind": "drop_response", "every": 3, "limit": 2, "action": "close"})
    assert _decisions(rules, 12) == [False, False, True, False, False, True] + [False] * 6
    assert rules.response_action(1, API_PRODUCE) is None


def test_probability_is_reproducible_by_seed():
    def run(seed):
        rules = RuleSet()
        rules.add({"kind": "drop_response", "probability": 0.3, "seed": seed})
        return _decisions(rules, 200)

    assert run(5) == run(5)
    assert run(5) != run(6)
    assert 30 < sum(run(5)) < 90


def test_at_least_every_k_no_client_goes_untouched_by_chance():
    # at probability 0.05, 30 matching responses of one client were all forwarded in a
    # combined run (0.95**30: about one run in five): its column NOT EXERCISED by chance
    rules = RuleSet()
    rule = rules.add({"kind": "drop_response", "probability": 0.0, "seed": 1,
                      "at_least_every": 10})

    def lost(client, n):
        return [rules.response_action(1, API_PRODUCE, client) is not None for _ in range(n)]

    assert lost("a", 9) == [False] * 9 and lost("b", 9) == [False] * 9  # per client
    assert lost("a", 1) == [True] and lost("b", 11) == [True] + [False] * 9 + [True]
    assert rule.to_json()["clients"] == {"a": [10, 1], "b": [20, 2]}
    # the seeded draws are the same with or without it: only forwarded ones turn lost
    plain, floor = RuleSet(), RuleSet()
    plain.add({"kind": "drop_response", "probability": 0.3, "seed": 5})
    floor.add({"kind": "drop_response", "probability": 0.3, "seed": 5, "at_least_every": 4})
    a, b = _decisions(plain, 200), _decisions(floor, 200)
    assert all(y for x, y in zip(a, b, strict=True) if x) and sum(b) > sum(a)


def test_broker_scope_and_latency_direction():
    rules = RuleSet()
    rules.add({"kind": "latency", "ms": 250, "broker": 2})
    rules.add({"kind": "latency", "ms": 100, "direction": "both"})
    assert rules.delay(1, downstream=True) == pytest.approx(0.1)
    assert rules.delay(2, downstream=True) == pytest.approx(0.35)
    assert rules.delay(2, downstream=False) == pytest.approx(0.1)


def test_blackhole_and_reset_lookup_and_removal():
    rules = RuleSet()
    bh = rules.add({"kind": "blackhole", "broker": 3})
    assert rules.blackholed(3) is bh and rules.blackholed(1) is None
    assert rules.remove(bh.id) is bh and rules.blackholed(3) is None
    rules.add({"kind": "reset"})
    assert rules.resetting(1) is not None
    assert len(rules.clear()) == 1 and rules.all() == []


@pytest.mark.parametrize("bad", [
    {"kind": "explode"},
    {"kind": "drop_response"},
    {"kind": "drop_response", "next": 1, "every": 2},
    {"kind": "drop_response", "probability": 2},
    {"kind": "drop_response", "next": 1, "action": "maim"},
    {"kind": "latency", "ms": 0},
    {"kind": "latency", "ms": 10, "direction": "sideways"},
    {"kind": "blackhole", "colour": "black"},
    {"kind": "drop_response", "next": "many"},
    {"kind": "drop_response", "every": 3, "at_least_every": 5},
    {"kind": "drop_response", "probability": 0.1, "at_least_every": 0},
])
def test_bad_rules_are_refused(bad):
    with pytest.raises(RuleError):
        RuleSet().add(bad)
