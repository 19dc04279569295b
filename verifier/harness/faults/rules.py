"""The proxy's fault rules: what to do with a frame, as plain data and pure decisions.

A rule is set over the proxy's control interface as JSON and applies to the brokers it
names (``broker``: a node id, or null for every broker), to existing connections as well
as new ones, until it is removed. Its kinds (``drop_response``, ``latency``,
``blackhole``, ``reset``, ``hold``, ``error_answer``) and their parameters are parsed and checked in
verifier.harness.faults.rule_params, where each is described.

The decisions here are pure so that the unit tier can test them without sockets.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from verifier.harness.faults import error_rules
from verifier.harness.faults.hold_tally import HoldTallies
from verifier.harness.faults.rule_params import RuleError, check, fields_of
from verifier.harness.kafka_wire import (
    API_PRODUCE,
    ERROR_CODES,
    RequestIdentity,
    WireError,
    response_summary,
)


@dataclass
class Rule:
    kind: str
    broker: int | None = None
    api_keys: tuple[int, ...] = (API_PRODUCE,)
    action: str = "drop"
    #: drop_response: only responses to requests the broker appended
    appended: bool = False
    next: int | None = None
    every: int | None = None
    probability: float | None = None
    #: with probability: a client none of whose last K matching responses was lost loses
    #: the next one, so a column with few requests in the window is not missed by chance
    at_least_every: int | None = None
    seed: int = 0
    limit: int | None = None
    ms: int = 0
    direction: str = "downstream"
    # ----- hold ------------------------------------------------------------------------
    transactional_id: str | None = None
    partition: int | None = None
    topic: str | None = None
    client_view: str = "timeout"
    release_on: dict | None = None
    release_after_ms: int | None = None
    skip: int = 0
    #: EndTxn or WriteTxnMarkers only: hold commits (True) or aborts (False); None: either
    committed: bool | None = None
    #: hold back the next requests of these APIs until the released ones are answered
    then_hold: dict | None = None
    #: release only once the partition holds this marker of the request's transaction
    after_marker: str | None = None
    #: hold only requests whose records say their transaction is meant to (abort, commit)
    records: str | None = None
    # ----- error_answer (verifier.harness.faults.error_rules) ---------------------------
    #: Kafka's error name it answers with (its code: error_code)
    error: str | None = None
    variant: str | None = None
    client_id: str | None = None
    #: requests chosen for an error answer; those whose answer could not be forged
    chosen: int = 0
    unforged: int = 0
    #: after_marker: its release_on event came, so a request matching now belongs to a
    #: later transaction: the rule holds nothing more
    stopped_holding: bool = False
    #: then_hold's state: the transactional id gated (None: no gate), released requests
    #: not yet answered
    gate_txn: str | None = None
    awaiting: int = 0
    id: int = 0
    #: responses that matched (api key, broker) while the rule was set
    matched: int = 0
    #: frames this rule acted on (dropped responses, closes, delays, discards, resets)
    hits: int = 0
    #: client id -> [matched, hits]: what the rule met and did per client (the exposure
    #: of each column, verifier.judge.exposure); "" for a connection with no request yet
    clients: dict = field(default_factory=dict)
    #: hold: per client and transactional id, what became of the requests it kept
    #: (held, released into its event or at its bound, answered: the exposure)
    tallies: HoldTallies = field(default_factory=HoldTallies, repr=False, compare=False)
    _rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)
    #: at_least_every: client id -> its matching responses forwarded since its last loss
    _since_hit: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict, rule_id: int) -> Rule:
        """Build and validate a rule from the control interface's JSON."""
        rule = cls(**fields_of(data), id=rule_id)
        check(rule)
        rule._rng = random.Random(rule.seed)
        return rule

    def note(self, client_id: str | None, hit: bool, matched: bool = True) -> None:
        """Count one request or response of ``client_id`` this rule met (and acted on)."""
        entry = self.clients.setdefault(client_id or "", [0, 0])
        entry[0] += int(matched)
        entry[1] += int(hit)

    def applies_to(self, broker: int) -> bool:
        return self.broker is None or self.broker == broker

    def to_json(self) -> dict:
        out = {k: getattr(self, k) for k in (
            "id", "kind", "broker", "action", "next", "every", "probability", "seed",
            "limit", "ms", "direction", "matched", "hits")}
        if self.at_least_every is not None:
            out["at_least_every"] = self.at_least_every
        out["api_keys"] = list(self.api_keys)
        if self.appended:
            out["appended"] = True
        out["clients"] = {k: list(v) for k, v in self.clients.items()}
        if self.kind == "hold":
            out.update({k: getattr(self, k) for k in (
                "transactional_id", "partition", "topic", "client_view", "release_on",
                "release_after_ms", "skip")})
            if self.then_hold is not None:
                out["then_hold"] = dict(self.then_hold)
            if self.committed is not None:
                out["committed"] = self.committed
            if self.after_marker is not None:
                out["after_marker"] = self.after_marker
            if self.records is not None:
                out["records"] = self.records
            out["holds"] = self.tallies.to_json()
        if self.kind == "error_answer":
            out.update({k: getattr(self, k) for k in (
                "error", "error_code", "variant", "transactional_id", "client_id",
                "partition", "topic", "skip", "chosen", "unforged")})
        return out

    @property
    def error_code(self) -> int | None:
        return None if self.error is None else ERROR_CODES.get(self.error)

    # ----- hold: pure decisions on parsed requests -------------------------------------

    def hold_matches(self, request: RequestIdentity) -> bool:
        """Whether a ``hold`` rule matches this request (its api key, transactional id,
        partition and topic), regardless of how many it already held."""
        if self.kind != "hold" or request.api_key not in self.api_keys:
            return False
        if self.transactional_id is not None and \
                request.transactional_id != self.transactional_id:
            return False
        if self.committed is not None and request.committed != self.committed:
            return False
        if self.records is not None and request.records_abort != (self.records == "abort"):
            return False
        return request.touches(self.partition, self.topic)

    def decide_hold(self, request: RequestIdentity) -> bool:
        """Count a match; True for the ones to hold (after ``skip``, up to ``limit``,
        default 1)."""
        if not self.hold_matches(request):
            return False
        self.matched += 1
        if self.matched <= self.skip or self.hits >= (self.limit or 1) or \
                self.stopped_holding:
            self.note(request.client_id, False)
            return False
        self.hits += 1
        self.note(request.client_id, True)
        return True

    def releases(self, held: RequestIdentity, event: RequestIdentity, direction: str,
                 error_code: int | None = None) -> bool:
        """Whether ``event`` (a request, or the response to the request ``event``, as
        ``direction`` says, with the response's ``error_code``) passing the proxy
        releases the held request ``held``. ``"ok": true`` in ``release_on`` asks for a
        response without error (an AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS,
        while the coordinator still ends the previous transaction, does not count)."""
        on = self.release_on
        if on is None or event.api_key != on["api_key"] or direction != on["direction"]:
            return False
        if on.get("ok") and (direction != "response" or error_code != 0):
            return False
        if "partition" in on and not self._release_partition_matches(held, event):
            return False
        if "records" in on and event.records_abort != (on["records"] == "abort"):
            return False
        if "producer" in on and (held.producer_id is None or (
                event.producer_id, event.producer_epoch) != (held.producer_id,
                                                            held.producer_epoch)):
            return False
        return self._release_txn_matches(held, event)

    def _release_partition_matches(self, held: RequestIdentity, event: RequestIdentity) -> bool:
        """``release_on.partition``: the event adds (AddPartitionsToTxn) or writes
        (Produce) this partition: a number, or ``same``, the held request's (the rule's
        ``partition``, else the first it writes). By index: the held Produce may name its
        topic by id (v13+), the event by name; one transactional id writes one topic here."""
        want = self.release_on["partition"]
        if want == "same":
            want = self.partition if self.partition is not None else \
                next((p.partition for p in held.partitions), None)
        return want is not None and any(p.partition == want for p in event.partitions)

    def _release_txn_matches(self, held: RequestIdentity, event: RequestIdentity) -> bool:
        """``release_on.transactional_id``: none (any), ``same`` (the held request's) or a
        named one; ``event`` must carry it."""
        want = (self.release_on or {}).get("transactional_id")
        if want is None:
            return True
        expected = held.transactional_id if want == "same" else want
        return expected is not None and event.transactional_id == expected

    def arms(self, held: RequestIdentity, event: RequestIdentity, direction: str) -> bool:
        """``release_on.after``: whether ``event`` is the event after which (and only
        after which) ``release_on`` releases ``held``: same API and direction, with the
        transactional id ``release_on`` names (an AddPartitionsToTxn that adds the held
        partition again belongs to the next transaction only once its own EndTxn passed)."""
        after = (self.release_on or {}).get("after")
        if after is None or event.api_key != after["api_key"] or \
                direction != after["direction"]:
            return False
        return self._release_txn_matches(held, event)

    def gates(self, request: RequestIdentity) -> bool:
        """Whether ``then_hold`` holds this request back now: the rule released a
        request of its transactional id that the broker has not answered yet."""
        return (self.then_hold is not None and self.gate_txn is not None
                and self.awaiting > 0 and request.api_key in self.then_hold["api_keys"]
                and request.transactional_id == self.gate_txn)

    def decide_response(self, api_key: int, client_id: str | None = None,
                        appended=None) -> str | None:
        """For a ``drop_response`` rule: ``drop``, ``close`` or None (forward it).
        ``appended``: a callable saying whether the response answers an append, asked
        only by a rule that drops those alone (it parses the response).

        Counts the match; the seeded generator advances only on matching responses, so
        the same seed and the same request stream give the same decisions.
        """
        if self.kind != "drop_response" or api_key not in self.api_keys:
            return None
        if self.appended and not (appended is not None and appended()):
            return None  # an error answer: nothing was written, no ack to lose
        self.matched += 1
        if self.limit is not None and self.hits >= self.limit:
            self.note(client_id, False)
            return None
        if self.next is not None:
            hit = self.hits < self.next
        elif self.every is not None:
            hit = self.matched % self.every == 0
        else:
            hit = self._rng.random() < (self.probability or 0.0)  # drawn every time
            if self.at_least_every is not None:
                since = self._since_hit.get(client_id or "", 0) + 1
                hit = hit or since >= self.at_least_every
                self._since_hit[client_id or ""] = 0 if hit else since
        self.note(client_id, hit)
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


def answers_append(payload: bytes, api_version: int) -> bool:
    """Whether a Produce response says the broker appended (some partition without
    error); an unreadable one counts as not."""
    try:
        parts = response_summary(payload, API_PRODUCE, api_version).get("partitions") or []
    except WireError:
        return False
    return any(error == 0 for _, _, error, _ in parts)



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

    def get(self, rule_id: int) -> Rule | None:
        return self._rules.get(rule_id)

    def clear(self) -> list[Rule]:
        removed = list(self._rules.values())
        self._rules.clear()
        return removed

    def for_broker(self, broker: int) -> list[Rule]:
        return [r for r in self._rules.values() if r.applies_to(broker)]

    def all(self) -> list[Rule]:
        return list(self._rules.values())

    def response_action(self, broker: int, api_key: int, client_id: str | None = None,
                        appended=None) -> tuple[str, Rule] | None:
        """The first rule that drops or closes on this response, if any (``appended``:
        see :meth:`Rule.decide_response`)."""
        for rule in self.for_broker(broker):
            action = rule.decide_response(api_key, client_id, appended)
            if action:
                return action, rule
        return None

    def delay(self, broker: int, downstream: bool, client_id: str | None = None) -> float:
        """Total hold-back for one frame; each delaying rule counts the frame as a hit."""
        total = 0.0
        for rule in self.for_broker(broker):
            d = rule.delay_for(downstream)
            if d:
                rule.hits += 1
                rule.note(client_id, True)
                total += d
        return total

    def blackholed(self, broker: int) -> Rule | None:
        return next((r for r in self.for_broker(broker) if r.kind == "blackhole"), None)

    def resetting(self, broker: int) -> Rule | None:
        return next((r for r in self.for_broker(broker) if r.kind == "reset"), None)

    def gate_for(self, broker: int, request: RequestIdentity) -> Rule | None:
        """The first ``hold`` rule whose ``then_hold`` holds this request back now."""
        return next((r for r in self.for_broker(broker) if r.gates(request)), None)

    def hold_for(self, broker: int, request: RequestIdentity) -> Rule | None:
        """The first ``hold`` rule that keeps this request, if any (counts matches)."""
        for rule in self.for_broker(broker):
            if rule.decide_hold(request):
                return rule
        return None

    def error_for(self, broker: int, request: RequestIdentity) -> Rule | None:
        """The first ``error_answer`` rule that forges this request's answer, if any
        (counts matches: verifier.harness.faults.error_rules)."""
        for rule in self.for_broker(broker):
            if error_rules.choose(rule, request):
                return rule
        return None

    def holding(self, broker: int) -> bool:
        """Whether any ``hold`` rule applies to ``broker`` (requests must be parsed)."""
        return any(r.kind == "hold" for r in self.for_broker(broker))


#: RuleError is what Rule.from_json and RuleSet.add raise (defined with the checks)
__all__ = ["Rule", "RuleError", "RuleSet", "answers_append"]
