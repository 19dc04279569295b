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
    ``limit`` caps the total. ``appended`` true: only a Produce response that answers an
    append (some partition without error) matches; an error response passes untouched
    (the broker wrote nothing, so losing it loses no acknowledgement).
``latency``
    Delay every frame by ``ms`` in ``direction`` ``downstream`` (responses, default),
    ``upstream`` (requests) or ``both``; order is kept.
``blackhole``
    Forward nothing in either direction; connections stay open (requests vanish).
``reset``
    Reset (RST) every open connection when set, and every new one while set.
``hold``
    Keep a matching request (``api_keys``, default Produce; optionally its
    ``transactional_id``, a ``partition`` it writes and its ``topic``, for EndTxn
    ``committed`` true or false; ``skip`` matches first, then ``limit`` requests, default
    1) instead of forwarding it; the broker-side connection stays open for it. The
    client sees ``client_view`` ``timeout`` (its connection stalls: nothing more is
    forwarded on it, until it gives up) or ``reset`` (its side of the connection is
    reset at once); ``copy``: the request goes on at once and the client gets its answer,
    the proxy holds a copy of it (a retry whose original was delayed in the network),
    whose answer is recorded, never sent to the client. The request goes to the broker when
    ``release_on`` passes the proxy (``{"api_key": 26, "direction": "response",
    "transactional_id": "same"}``: the EndTxn response of the held request's
    transactional id; ``"same"``, a literal id, or absent for any; ``"ok": true``: only
    a response without error), or after
    ``release_after_ms``, whichever comes first, or when the rule is removed.
    ``then_hold`` (``{"api_keys": [24, 0], "max_ms": 10000}``): once it released a
    request, the rule holds back the next requests of those APIs with the released
    request's transactional id (the client sees only a delay: its connection keeps its
    order) until the broker has answered every request the rule released, or ``max_ms``
    passed: the late request is applied before the client's next step.
    ``release_on.after`` (``{"api_key": 26, "direction": "response"}``): the release_on
    event counts only once this event of the same transactional id passed after the hold
    (the held request's own transaction ended: its next AddPartitionsToTxn is the next
    transaction's); from that event on the rule holds no new request.
    ``release_on.partition`` (a number, or ``"same"``: the held request's): the event
    must add or write that partition (a next transaction's first AddPartitionsToTxn may
    add only other partitions). ``release_on.records`` (``"abort"`` or ``"commit"``, on a
    Produce): the event's records must say their transaction is meant to abort (commit),
    in the generators' record format (verifier.rundata.records): a stale EndTxn(commit)
    released into a transaction its producer then aborts shows as an aborted read.
    ``release_on.producer`` (``"same"``): the event carries the held request's producer
    id and epoch (a WriteTxnMarkers copy under transaction version 2 has the epoch of the
    producer's next transaction, and only that one). ``"ok": true`` on a Produce: no
    partition answered with an error. A held request without a transactional id (a
    WriteTxnMarkers, coordinator to leader, on the inter-broker listener) gates, with
    ``then_hold``, the transactional id of the event that released it (``release_on``
    names one).
    ``after_marker`` (``abort``, ``commit`` or ``any``; held Produce or TxnOffsetCommit
    requests only): the
    ``release_on`` event does not release the request yet; it starts ``then_hold``'s gate
    and the proxy watches the partition the request writes (the rule's ``partition``, else
    its first; a TxnOffsetCommit's group's ``__consumer_offsets`` partition) until the
    marker of that type of the request's producer id and epoch is in
    its log (verifier.harness.faults.marker_probe), then releases it: a late Produce lands
    after its own transaction's marker, which the coordinator writes after it answered
    EndTxn, between brokers. From that event on the rule holds no new request (one that
    matches belongs to a later transaction).
    ``records`` (``"abort"`` or ``"commit"``; held Produce or TxnOffsetCommit requests):
    hold only a request whose records (a TxnOffsetCommit: its offsets' metadata, where the
    copier writes it) say their transaction is meant to abort (commit).

The decisions here are pure so that the unit tier can test them without sockets.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from verifier.harness.kafka_wire import (
    API_END_TXN,
    API_PRODUCE,
    API_TXN_OFFSET_COMMIT,
    API_WRITE_TXN_MARKERS,
    RequestIdentity,
    WireError,
    response_summary,
)

KINDS = ("drop_response", "latency", "blackhole", "reset", "hold")
DIRECTIONS = ("downstream", "upstream", "both")
CLIENT_VIEWS = ("timeout", "reset", "copy")
RELEASE_DIRECTIONS = ("request", "response")
RELEASE_KEYS = {"api_key", "direction", "transactional_id", "ok", "after", "partition",
                "records", "producer"}
RELEASE_RECORDS = ("abort", "commit")
THEN_HOLD_KEYS = {"api_keys", "max_ms"}
MARKER_KINDS = ("abort", "commit", "any")


class RuleError(ValueError):
    """A rule that cannot be applied (bad kind or parameters)."""


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
    _rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict, rule_id: int) -> Rule:
        """Build and validate a rule from the control interface's JSON."""
        if not isinstance(data, dict):
            raise RuleError(f"a rule is a JSON object, not {type(data).__name__}")
        allowed = {"kind", "broker", "api_keys", "action", "appended", "next", "every",
                   "probability",
                   "seed", "limit", "ms", "direction", "transactional_id", "partition", "topic",
                   "client_view", "release_on", "release_after_ms", "skip", "then_hold",
                   "committed", "after_marker", "records"}
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
                appended=_opt_bool(data.get("appended")),
                next=_opt_int(data.get("next")),
                every=_opt_int(data.get("every")),
                probability=None if data.get("probability") is None
                else float(data["probability"]),
                seed=int(data.get("seed", 0)),
                limit=_opt_int(data.get("limit")),
                ms=int(data.get("ms", 0)),
                direction=str(data.get("direction", "downstream")),
                transactional_id=_opt_str(data.get("transactional_id")),
                partition=_opt_int(data.get("partition")),
                topic=_opt_str(data.get("topic")),
                client_view=str(data.get("client_view", "timeout")),
                release_on=_release_on(data.get("release_on")),
                release_after_ms=_opt_int(data.get("release_after_ms")),
                skip=int(data.get("skip", 0)),
                then_hold=_then_hold(data.get("then_hold")),
                committed=None if data.get("committed") is None
                else _opt_bool(data["committed"]),
                after_marker=_opt_str(data.get("after_marker")),
                records=_opt_str(data.get("records")),
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
            if self.appended and set(self.api_keys) != {API_PRODUCE}:
                raise RuleError("appended applies to Produce responses only (api_keys [0])")
            if (self.next is not None and self.next < 0) or (
                    self.every is not None and self.every < 1):
                raise RuleError("next must be >= 0 and every >= 1")
        if self.kind == "hold":
            if self.client_view not in CLIENT_VIEWS:
                raise RuleError(f"client_view must be one of {CLIENT_VIEWS}, "
                                f"not {self.client_view!r}")
            if self.release_on is None and self.release_after_ms is None:
                raise RuleError("hold needs release_on, release_after_ms or both (removing "
                                "the rule releases what it still holds)")
            if self.release_after_ms is not None and self.release_after_ms <= 0:
                raise RuleError("release_after_ms must be > 0")
            if self.skip < 0 or (self.limit is not None and self.limit < 1):
                raise RuleError("skip must be >= 0 and limit >= 1")
            if self.committed is not None and set(self.api_keys) not in (
                    {API_END_TXN}, {API_WRITE_TXN_MARKERS}):
                raise RuleError("committed applies to EndTxn or WriteTxnMarkers requests only "
                                "(api_keys [26] or [27])")
            if self.after_marker is not None and (
                    self.after_marker not in MARKER_KINDS or self.release_on is None
                    or set(self.api_keys) not in ({API_PRODUCE}, {API_TXN_OFFSET_COMMIT})):
                raise RuleError(f"after_marker must be one of {MARKER_KINDS}, with release_on, "
                                "on held Produce or TxnOffsetCommit requests (api_keys [0] or "
                                "[28]): the marker is looked for in the partition the request "
                                "writes")
            if self.records is not None and (
                    self.records not in RELEASE_RECORDS
                    or not set(self.api_keys) <= {API_PRODUCE, API_TXN_OFFSET_COMMIT}):
                raise RuleError(f"records must be one of {RELEASE_RECORDS}, on held Produce or "
                                "TxnOffsetCommit requests (api_keys [0], [28])")
            if self.then_hold is not None and not set(self.api_keys) <= TXN_APIS:
                raise RuleError("then_hold needs held requests that carry a transactional "
                                "id (the next requests are those of the same id)")
            if self.release_on is not None and \
                    self.release_on.get("transactional_id") == "same" and \
                    not set(self.api_keys) <= TXN_APIS:
                raise RuleError("release_on transactional_id \"same\" needs held requests "
                                "that carry a transactional id")
        if self.kind == "latency":
            if self.ms <= 0:
                raise RuleError("latency needs ms > 0")
            if self.direction not in DIRECTIONS:
                raise RuleError(f"direction must be one of {DIRECTIONS}")

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
        return out

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
        if self.partition is not None or self.topic is not None:
            return any((self.partition is None or p.partition == self.partition)
                       and (self.topic is None or p.topic == self.topic)
                       for p in request.partitions)
        return True

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
            hit = self._rng.random() < (self.probability or 0.0)
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


def _opt_int(value) -> int | None:
    return None if value is None else int(value)


def _opt_bool(value) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RuleError(f"expected true or false, not {value!r}")
    return value


def answers_append(payload: bytes, api_version: int) -> bool:
    """Whether a Produce response says the broker appended (some partition without
    error); an unreadable one counts as not."""
    try:
        parts = response_summary(payload, API_PRODUCE, api_version).get("partitions") or []
    except WireError:
        return False
    return any(error == 0 for _, _, error, _ in parts)


def _opt_str(value) -> str | None:
    if value is not None and not isinstance(value, str):
        raise RuleError(f"expected a string, not {value!r}")
    return value


#: the APIs whose requests carry a transactional id (Produce from v3; WriteTxnMarkers,
#: which names the producer id only, gets it from the proxy: Holds.attribute)
TXN_APIS = {0, 22, 24, 25, 26, 27, 28}


def _then_hold(value) -> dict | None:
    """``{"api_keys": [24, 0], "max_ms": 10000}`` (both optional)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - THEN_HOLD_KEYS:
        raise RuleError(f"then_hold must be an object with optionally api_keys and max_ms; "
                        f"not {value!r}")
    keys = tuple(int(k) for k in value.get("api_keys", (24, 0)))
    max_ms = int(value.get("max_ms", 10000))
    if not keys or not set(keys) <= TXN_APIS or max_ms <= 0:
        raise RuleError(f"then_hold: api_keys must name transactional APIs {sorted(TXN_APIS)} "
                        f"and max_ms be > 0; not {value!r}")
    return {"api_keys": list(keys), "max_ms": max_ms}


def _release_on(value) -> dict | None:
    """``{"api_key": K, "direction": "request"|"response", "transactional_id": ...}``."""
    if value is None:
        return None
    if not isinstance(value, dict) or "api_key" not in value or set(value) - RELEASE_KEYS:
        raise RuleError(f"release_on must be an object with api_key and optionally "
                        f"direction, transactional_id; not {value!r}")
    out = {"api_key": int(value["api_key"]),
           "direction": str(value.get("direction", "response"))}
    if out["direction"] not in RELEASE_DIRECTIONS:
        raise RuleError(f"release_on direction must be one of {RELEASE_DIRECTIONS}")
    if value.get("transactional_id") is not None:
        out["transactional_id"] = _opt_str(value["transactional_id"])
    if value.get("ok"):
        if out["direction"] != "response":
            raise RuleError("release_on ok applies to a response")
        out["ok"] = True
    if value.get("partition") is not None:
        part = value["partition"]
        if part != "same" and (isinstance(part, bool) or not isinstance(part, int)):
            raise RuleError(f"release_on partition is a partition number or \"same\"; "
                            f"not {part!r}")
        out["partition"] = part
    if value.get("records") is not None:
        if value["records"] not in RELEASE_RECORDS or out["api_key"] != API_PRODUCE:
            raise RuleError(f"release_on records is one of {RELEASE_RECORDS}, on a Produce "
                            f"(api_key 0); not {value['records']!r}")
        out["records"] = value["records"]
    if value.get("producer") is not None:
        if value["producer"] != "same":
            raise RuleError(f"release_on producer is \"same\" (the held request's producer "
                            f"id and epoch); not {value['producer']!r}")
        out["producer"] = "same"
    if value.get("after") is not None:
        after = value["after"]
        if not isinstance(after, dict) or "api_key" not in after or \
                set(after) - {"api_key", "direction"}:
            raise RuleError(f"release_on after must be an object with api_key and optionally "
                            f"direction; not {after!r}")
        out["after"] = {"api_key": int(after["api_key"]),
                        "direction": str(after.get("direction", "response"))}
        if out["after"]["direction"] not in RELEASE_DIRECTIONS:
            raise RuleError(f"release_on after direction must be one of {RELEASE_DIRECTIONS}")
    return out


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

    def holding(self, broker: int) -> bool:
        """Whether any ``hold`` rule applies to ``broker`` (requests must be parsed)."""
        return any(r.kind == "hold" for r in self.for_broker(broker))
