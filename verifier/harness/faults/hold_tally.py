"""What a ``hold`` rule did with the requests it kept, per client id and transactional id:
the counts a hold fault's heal records (``detail.holds``) and the exposure reads
(verifier.judge.faults.hold_counts).

A hold waits for an event (its ``release_on``); the late request or the replayed copy
does what the fault is for only when it goes to the broker in that event and the broker
answers it. So each request is counted when held, when released (into the event, or at
the rule's time bound or removal: the event never came) and, for one released into the
event, when the broker answered it, with the answer's error code. The key is the
request's client id and the transactional id it carries (the proxy names it on the
coordinator's WriteTxnMarkers too, verifier.harness.faults.holds.Holds.attribute), so a
copy of a marker counts for its producer's column, not the coordinator's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifier.harness.kafka_wire import RequestIdentity


@dataclass
class Tally:
    held: int = 0
    on_event: int = 0
    at_bound: int = 0
    answered: int = 0
    #: released into the event and sent to the broker, its answer not seen yet
    awaiting: int = 0
    errors: dict[int | None, int] = field(default_factory=dict)


class HoldTallies:
    """A hold rule's counts, by (client id, transactional id)."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, str | None], Tally] = {}

    def _of(self, request: RequestIdentity) -> Tally:
        return self._by.setdefault((request.client_id or "", request.transactional_id),
                                   Tally())

    def held(self, request: RequestIdentity) -> None:
        self._of(request).held += 1

    def released(self, request: RequestIdentity, on_event: bool, answer_due: bool) -> None:
        """``on_event``: released by the event the rule waits for; ``answer_due``: it
        reached the broker and asks for an answer (not an acks=0 Produce)."""
        t = self._of(request)
        if on_event:
            t.on_event += 1
            t.awaiting += int(answer_due)
        else:
            t.at_bound += 1

    def answered(self, request: RequestIdentity, error_code: int | None) -> None:
        """The broker's answer to a request released into the event."""
        t = self._of(request)
        t.answered += 1
        t.awaiting = max(0, t.awaiting - 1)
        t.errors[error_code] = t.errors.get(error_code, 0) + 1

    def awaiting(self) -> int:
        """Answers still due to requests released into the event."""
        return sum(t.awaiting for t in self._by.values())

    def to_json(self) -> list[dict]:
        return [{"client_id": cid, "transactional_id": txn, "held": t.held,
                 "on_event": t.on_event, "at_bound": t.at_bound, "answered": t.answered,
                 "awaiting": t.awaiting,
                 "errors": {("?" if k is None else str(k)): v for k, v in t.errors.items()}}
                for (cid, txn), t in self._by.items()]
