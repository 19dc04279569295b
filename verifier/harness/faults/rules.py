"""The proxy's fault rules: what to do with a frame, as plain data and pure decisions.

A rule is set over the proxy's control interface as JSON and applies to the brokers it
names (``broker``: a node id, or null for every broker), to existing connections as well
as new ones, until it is removed. Kinds:

``drop_response``
    Forward the request (the broker appends), then lose the response of a matching API
    (default Produce). ``action`` ``drop`` swallows it (the client waits
    ``request.timeout.ms``, then retries); ``close`` closes both sockets instead (an
    immediate connection error, then a retry). Which responses: ``next`` N (the next N),
    ``every`` K (every K-th), or ``probability`` P with ``seed`` S (reproducible);
    ``limit`` caps the total.
``latency``
    Delay every frame by ``ms`` in ``direction`` ``downstream`` (responses, default),
    ``upstream`` (requests) or ``both``; order is kept.
``blackhole``
    Forward nothing in either direction; connections stay open (requests vanish).
``reset``
    Reset (RST) every open connection when set, and every new one while set.

The decisions here are pure so that the unit tier can test them without sockets.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from verifier.harness.kafka_wire import API_PRODUCE

KINDS = ("drop_response", "latency", "blackhole", "reset")
DIRECTIONS = ("downstream", "upstream", "both")


class RuleError(ValueError):
    """A rule that cannot be applied (bad kind or parameters)."""


@dataclass
class Rule:
    kind: str
    broker: int | None = None
    api_keys: tuple[int, ...] = (API_PRODUCE,)
    action: str = "drop"
    next: int | None = None
    every: int | None = None
    probability: float | None = None
    seed: int = 0
    limit: int | None = None
    ms: int = 0
    direction: str = "downstream"
    id: int = 0
    #: responses that matched (api key, broker) while the rule was set
    matched: int = 0
    #: frames this rule acted on (dropped responses, closes, delays, discards, resets)
    hits: int = 0
    _rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict, rule_id: int) -> Rule:
        """Build and validate a rule from the control interface's JSON."""
        if not isinstance(data, dict):
            raise RuleError(f"a rule is a JSON object, not {type(data).__name__}")
        allowed = {"kind", "broker", "api_keys", "action", "next", "every", "probability",
                   "seed", "limit", "ms", "direction"}
        unknown = set(data) - allowed
        if unknown:
            raise RuleError(f"unknown rule fields {sorted(unknown)}")
        kind = data.get("kind")
        if kind not in KINDS:
            raise RuleError(f"unknown rule kind {kind!r}; expected one of {KINDS}")
        try:
            rule = cls(
                kind=kind,
                broker=None if data.get("broker") is None else int(data["broker"]),
                api_keys=tuple(int(k) for k in data.get("api_keys", (API_PRODUCE,))),
                action=str(data.get("action", "drop")),
                next=_opt_int(data.get("next")),
                every=_opt_int(data.get("every")),
                probability=None if data.get("probability") is None
                else float(data["probability"]),
                seed=int(data.get("seed", 0)),
                limit=_opt_int(data.get("limit")),
                ms=int(data.get("ms", 0)),
                direction=str(data.get("direction", "downstream")),
                id=rule_id,
            )
        except (TypeError, ValueError) as exc:
            raise RuleError(f"bad rule {data}: {exc}") from exc
        rule._validate()
        rule._rng = random.Random(rule.seed)
        return rule

    def _validate(self) -> None:
        if self.kind == "drop_response":
            chosen = [k for k in ("next", "every", "probability") if getattr(self, k) is not None]
            if len(chosen) != 1:
                raise RuleError("drop_response needs exactly one of next, every, probability")
            if self.action not in ("drop", "close"):
                raise RuleError(f"action must be drop or close, not {self.action!r}")
            if self.probability is not None and not 0 <= self.probability <= 1:
                raise RuleError(f"probability {self.probability} is outside 0..1")
            if (self.next is not None and self.next < 0) or (
                    self.every is not None and self.every < 1):
                raise RuleError("next must be >= 0 and every >= 1")
        if self.kind == "latency":
            if self.ms <= 0:
                raise RuleError("latency needs ms > 0")
            if self.direction not in DIRECTIONS:
                raise RuleError(f"direction must be one of {DIRECTIONS}")

    def applies_to(self, broker: int) -> bool:
        return self.broker is None or self.broker == broker

    def to_json(self) -> dict:
        out = {k: getattr(self, k) for k in (
            "id", "kind", "broker", "action", "next", "every", "probability", "seed",
            "limit", "ms", "direction", "matched", "hits")}
        out["api_keys"] = list(self.api_keys)
        return out

    def decide_response(self, api_key: int) -> str | None:
        """For a ``drop_response`` rule: ``drop``, ``close`` or None (forward it).

        Counts the match; the seeded generator advances only on matching responses, so
        the same seed and the same request stream give the same decisions.
        """
        if self.kind != "drop_response" or api_key not in self.api_keys:
            return None
        self.matched += 1
        if self.limit is not None and self.hits >= self.limit:
            return None
        if self.next is not None:
            hit = self.hits < self.next
        elif self.every is not None:
            hit = self.matched % self.every == 0
        else:
            hit = self._rng.random() < (self.probability or 0.0)
        if hit:
            self.hits += 1
            return self.action
        return None

    def delay_for(self, downstream: bool) -> float:
        """Seconds a frame in this direction is held back (0 if this rule does not delay)."""
        if self.kind != "latency":
            return 0.0
        if self.direction == "both" or (self.direction == "downstream") == downstream:
            return self.ms / 1000.0
        return 0.0


def _opt_int(value) -> int | None:
    return None if value is None else int(value)


class RuleSet:
    """The proxy's active rules, numbered in the order they were set."""

    def __init__(self) -> None:
        self._rules: dict[int, Rule] = {}
        self._next_id = 1

    def add(self, data: dict) -> Rule:
        rule = Rule.from_json(data, self._next_id)
        self._next_id += 1
        self._rules[rule.id] = rule
        return rule

    def remove(self, rule_id: int) -> Rule | None:
        return self._rules.pop(rule_id, None)

    def clear(self) -> list[Rule]:
        removed = list(self._rules.values())
        self._rules.clear()
        return removed

    def for_broker(self, broker: int) -> list[Rule]:
        return [r for r in self._rules.values() if r.applies_to(broker)]

    def all(self) -> list[Rule]:
        return list(self._rules.values())

    def response_action(self, broker: int, api_key: int) -> tuple[str, Rule] | None:
        """The first rule that drops or closes on this response, if any."""
        for rule in self.for_broker(broker):
            action = rule.decide_response(api_key)
            if action:
                return action, rule
        return None

    def delay(self, broker: int, downstream: bool) -> float:
        """Total hold-back for one frame; each delaying rule counts the frame as a hit."""
        total = 0.0
        for rule in self.for_broker(broker):
            d = rule.delay_for(downstream)
            if d:
                rule.hits += 1
                total += d
        return total

    def blackholed(self, broker: int) -> Rule | None:
        return next((r for r in self.for_broker(broker) if r.kind == "blackhole"), None)

    def resetting(self, broker: int) -> Rule | None:
        return next((r for r in self.for_broker(broker) if r.kind == "reset"), None)
