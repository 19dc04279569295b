"""The fault proxy's holds: requests a ``hold`` rule keeps, what releases them, the
``then_hold`` gate behind them, and the numbered events that say so (``GET /holds``,
copied by the nemesis into the run's history).

The proxy's connections (verifier.harness.faults.proxy) hand requests and responses in
(:meth:`Holds.hold`, :meth:`Holds.gate`, :meth:`Holds.passed`, :meth:`Holds.answered`)
and send what is released; this module decides when, from the rules
(verifier.harness.faults.rules) and, for ``after_marker``, the partition's log
(verifier.harness.faults.marker_probe).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time
from typing import Protocol

from verifier.harness.faults.marker_probe import MarkerProbe, Upstream
from verifier.harness.faults.rules import Rule, RuleSet
from verifier.harness.kafka_wire import (
    API_WRITE_TXN_MARKERS,
    RequestIdentity,
    WireError,
    response_error,
    response_summary,
)

log = logging.getLogger(__name__)

#: hold events kept for the control interface (a run holds a handful)
HOLD_EVENTS_SIZE = 10_000


def now_ms() -> int:
    return int(time.time() * 1000)


class HeldConnection(Protocol):
    """What a hold needs of the proxy's connection it came on."""

    broker: int
    id: int
    held_open: int
    stalled: bool
    deferred: list[tuple] | None

    @property
    def counters(self) -> collections.Counter: ...

    def send_released(self, held: Held) -> bool: ...

    def flush_deferred(self) -> bool: ...

    def held_answered(self) -> None: ...

    def reset_client(self, reason: str) -> None: ...


class Held:
    """One request a ``hold`` rule keeps: the frame, who sent it, what became of it."""

    def __init__(self, hold_id: int, rule: Rule, conn: HeldConnection, payload: bytes,
                 request: RequestIdentity) -> None:
        self.id, self.rule, self.conn = hold_id, rule, conn
        self.payload, self.request = payload, request
        self.t = now_ms()
        self.released = False
        self.timer: asyncio.TimerHandle | None = None
        #: held back by the rule's ``then_hold`` (a delay, in order), not kept
        self.gated = False
        #: a copy (client_view "copy"): the original went on; its answer is not the client's
        self.copy = rule.client_view == "copy"
        #: after_marker: the partition watched for the marker; the release_on event came
        #: (the proxy watches it now); counted by then_hold's gate from that event on
        self.where: tuple[str, int] | None = None
        self.triggered = False
        self.gate_counted = False
        #: release_on.after: its event passed since the hold (release_on counts now)
        self.armed = False
        #: released by the event the rule waits for (not at its time bound or removal)
        self.on_event = False


class Holds:
    """Every request the proxy's hold rules keep, and their events, numbered."""

    def __init__(self, rules: RuleSet, upstream: Upstream, brokers: list[int]) -> None:
        self.rules = rules
        #: hold, trigger, marker, release and answer events, numbered
        self.events: collections.deque[dict] = collections.deque(maxlen=HOLD_EVENTS_SIZE)
        self._event_seq = 0
        self._held: dict[int, Held] = {}  # not yet released
        #: rule id -> requests its then_hold holds back, and the gate's deadline
        self._gated: dict[int, list[Held]] = {}
        self._gate_timers: dict[int, asyncio.TimerHandle] = {}
        self._next_hold = 1
        self.markers = MarkerProbe(upstream, brokers)
        #: producer id -> the transactional id its requests carry (WriteTxnMarkers names
        #: only the producer id)
        self.producers: dict[int, str] = {}

    def attribute(self, request: RequestIdentity) -> RequestIdentity:
        """Learn each producer id's transactional id from the producer's own requests,
        and name it on the coordinator's WriteTxnMarkers for that producer id, so that a
        hold's ``transactional_id`` matches a marker of that producer only."""
        if request.transactional_id is not None and request.producer_id is not None:
            self.producers[request.producer_id] = request.transactional_id
        elif request.api_key == API_WRITE_TXN_MARKERS and request.producer_id in self.producers:
            return dataclasses.replace(request,
                                       transactional_id=self.producers[request.producer_id])
        return request

    def watching(self) -> bool:
        """Whether requests must be parsed: a hold or error_answer rule is set, or a
        request is held (its release may wait for an event on any broker)."""
        return bool(self._held) or any(r.kind in ("hold", "error_answer")
                                       for r in self.rules.all())

    def held_on(self, conn: HeldConnection) -> list[Held]:
        return [h for h in self._held.values() if h.conn is conn]

    def _event(self, kind: str, held: Held, **extra) -> None:
        self._event_seq += 1
        self.events.append({
            "seq": self._event_seq, "event": kind, "t": now_ms(), "rule": held.rule.id,
            "hold": held.id, "broker": held.conn.broker, "conn": held.conn.id,
            "request": held.request.to_json(), **extra})

    def hold(self, rule: Rule, conn: HeldConnection, payload: bytes,
             request: RequestIdentity) -> Held:
        """Keep ``payload`` instead of forwarding it; the client sees a stall or a reset."""
        held = Held(self._next_hold, rule, conn, payload, request)
        self._next_hold += 1
        self._held[held.id] = held
        conn.held_open += 1
        conn.counters["requests_held"] += 1
        rule.tallies.held(request)
        self._event("hold", held, client_view=rule.client_view,
                    release_on=rule.release_on, release_after_ms=rule.release_after_ms,
                    **({"after_marker": rule.after_marker} if rule.after_marker else {}))
        if rule.after_marker:
            held.where = self.markers.where(request, rule.partition, rule.topic, conn.broker)
            if held.where is not None:
                self.markers.note_hold(rule.id, conn.broker, held.where, now=held.copy)
        if rule.release_after_ms:
            held.timer = asyncio.get_running_loop().call_later(
                rule.release_after_ms / 1000, self.release, held,
                f"after {rule.release_after_ms} ms")
        if rule.client_view == "reset":
            conn.reset_client(f"reset by hold rule {rule.id}")
        elif rule.client_view == "timeout":
            conn.stalled = True
        return held

    def release(self, held: Held, reason: str, trigger: dict | None = None,
                txn: str | None = None) -> None:
        """Send a held request to the broker on its own connection (once); ``txn``: the
        transactional id of the event that released it (gated when the held request
        carries none)."""
        if held.released:
            return
        held.released = True
        self._held.pop(held.id, None)
        if held.timer is not None:
            held.timer.cancel()
        delivered = held.conn.send_released(held)
        held.conn.counters["requests_released"] += 1
        held.on_event = trigger is not None  # its event came (a bound or removal: none)
        held.rule.tallies.released(held.request, held.on_event,
                                   delivered and held.request.acks != 0)
        self._event("release", held, reason=reason, held_ms=now_ms() - held.t,
                    delivered=delivered, **({"trigger": trigger} if trigger else {}))
        rule = held.rule
        if held.gate_counted and not delivered:  # counted at its trigger: no answer comes
            rule.awaiting -= 1
            if rule.awaiting <= 0 and rule.gate_txn is not None:
                self.open_gate(rule, f"hold {held.id} not delivered")
        elif delivered:
            self._count_for_gate(held, txn)

    def _count_for_gate(self, held: Held, txn: str | None = None) -> None:
        """``then_hold``: hold back the client's next requests of the held request's
        transactional id (else ``txn``, its releasing event's) until the broker has
        answered it (counted once)."""
        rule = held.rule
        gated = held.request.transactional_id or txn
        if held.gate_counted or not rule.then_hold or held.request.acks == 0 or \
                gated is None or \
                self.rules.get(rule.id) is not rule:  # a removed rule gates nothing more
            return
        held.gate_counted = True
        rule.gate_txn, rule.awaiting = gated, rule.awaiting + 1
        if rule.id not in self._gate_timers:
            max_ms = rule.then_hold["max_ms"]
            self._gate_timers[rule.id] = asyncio.get_running_loop().call_later(
                max_ms / 1000, self.open_gate, rule, f"after {max_ms} ms")

    def _await_marker(self, held: Held, trigger: dict) -> None:
        """``after_marker``: the release_on event came; gate the client's next requests
        from now on, and release the held request once its transaction's marker is in
        the partition's log."""
        held.triggered = True
        rule, req = held.rule, held.request
        rule.stopped_holding = True
        kind = rule.after_marker
        self._event("trigger", held, trigger=trigger,
                    waits_for={"marker": kind, "producer_id": req.producer_id,
                               "producer_epoch": req.producer_epoch,
                               "topic": held.where[0] if held.where else None,
                               "partition": held.where[1] if held.where else None})
        self._count_for_gate(held)
        if held.where is None or req.producer_id is None or req.producer_epoch is None:
            self.release(held, "no partition or producer to watch", trigger)
            return
        task = self.markers.wait(rule.id, held.conn.broker, held.where, req.producer_id,
                                 req.producer_epoch, kind)
        task.add_done_callback(lambda t, h=held, tr=trigger: self._marker_seen(h, tr, t))

    def _marker_seen(self, held: Held, trigger: dict, task: asyncio.Task) -> None:
        if held.released or task.cancelled():
            return
        if task.exception() is not None:  # the release_after_ms timer still releases it
            log.warning("hold %s: marker probe failed: %s", held.id, task.exception())
            return
        batch, searched_from = task.result()
        self._event("marker", held, marker={**batch.to_json(), "topic": held.where[0],
                                            "partition": held.where[1]},
                    searched_from=searched_from)
        self.release(held, f"{batch.marker} marker at offset {batch.base_offset}", trigger)

    def gate(self, rule: Rule, conn: HeldConnection, payload: bytes, request: RequestIdentity,
             acks: int | None) -> None:
        """Hold ``request`` (and what follows it on ``conn``) back until the broker has
        answered what ``rule`` released: the client sees a delay, in order."""
        held = Held(self._next_hold, rule, conn, payload, request)
        self._next_hold += 1
        held.gated = True
        held.copy = False  # the client's own request, delayed: its answer is the client's
        conn.held_open += 1
        conn.counters["requests_held"] += 1
        conn.deferred = [(payload, request.correlation_id, request.api_key,
                          request.api_version, acks, request, held)]
        self._gated.setdefault(rule.id, []).append(held)
        self._event("hold", held, client_view="delay",
                    until=f"the broker answered what rule {rule.id} released",
                    max_ms=rule.then_hold["max_ms"] if rule.then_hold else None)

    def open_gate(self, rule: Rule, reason: str) -> None:
        """Forward what ``rule``'s then_hold held back; it gates nothing until its next
        release."""
        rule.gate_txn, rule.awaiting = None, 0
        timer = self._gate_timers.pop(rule.id, None)
        if timer is not None:
            timer.cancel()
        for held in self._gated.pop(rule.id, []):
            held.released = True
            delivered = held.conn.flush_deferred()
            held.conn.counters["requests_released"] += 1
            self._event("release", held, reason=reason, held_ms=now_ms() - held.t,
                        delivered=delivered)

    def passed(self, event: RequestIdentity, direction: str, response: bytes = b"") -> None:
        """A request, or the response to one, went through: release what it triggers."""
        if not self._held:
            return
        error = None
        if response:
            try:
                error = response_error(response_summary(response, event.api_key,
                                                        event.api_version))
            except WireError:
                error = None
        for held in list(self._held.values()):
            rule = held.rule
            if held.triggered:
                continue
            if (rule.release_on or {}).get("after") and not held.armed:
                if rule.arms(held.request, event, direction):
                    held.armed = True
                    rule.stopped_holding = True  # what matches now is a later transaction's
                    self._event("armed", held, by={"direction": direction, **event.to_json(),
                                                   **({"error_code": error}
                                                      if error is not None else {})})
                continue
            if held.rule.releases(held.request, event, direction, error):
                trigger = {"direction": direction, **event.to_json()}
                if error is not None:
                    trigger["error_code"] = error
                if held.rule.after_marker:
                    self._await_marker(held, trigger)
                else:
                    if held.copy:  # the duplicate arrived where it does harm: no more
                        rule.stopped_holding = True
                    self.release(held, f"{event.api_name} {direction}", trigger,
                                 event.transactional_id)

    def answered(self, held: Held, payload: bytes, to_client: bool) -> None:
        try:
            summary = response_summary(payload, held.request.api_key, held.request.api_version)
        except WireError as exc:
            summary = {"unparsed": str(exc)}
        self._event("answer", held, response=summary, to_client=to_client,
                    **({"gated": True} if held.gated else {}))
        if held.on_event and not held.gated:
            held.rule.tallies.answered(held.request, response_error(summary)
                                       if "unparsed" not in summary else None)
        held.conn.held_answered()
        rule = held.rule
        if rule.then_hold and not held.gated and held.gate_counted and \
                rule.gate_txn is not None:
            rule.awaiting -= 1
            if rule.awaiting <= 0:
                self.open_gate(rule, f"answered: hold {held.id}")

    def release_rule(self, rule: Rule) -> None:
        for held in [h for h in self._held.values() if h.rule is rule]:
            self.release(held, "rule removed")
        self.markers.cancel(rule.id)
        if rule.then_hold:
            self.open_gate(rule, "rule removed")

    def events_since(self, seq: int) -> list[dict]:
        return [e for e in self.events if e["seq"] > seq]

    def close(self) -> None:
        self.markers.close()
