"""What a hold (or a copy) did, per client and transactional id, as the exposure counts it
(pure; DESIGN §11, "exposure is what happened").

A hold rule waits for an event (``release_on``): the late request or the replayed copy
does what the fault is for only when it goes to the broker in that event and the broker
answers it. Being held proves nothing, and neither does a release at the rule's time
bound (``release_after_ms``) or at its removal: the window the fault needs did not come.
So a hold acted on a column by the requests it released *into its event* that the broker
*answered*; the answers' error codes say what the broker made of them (a fixed broker's
refusal is still an answer).

The counts come from the fault's heal detail ``holds`` (verifier.harness.faults.hold_tally,
one entry per client id and transactional id). A run recorded before those counts has the
proxy's hold events in its nemesis history (``event`` lines ``hold``, ``release``,
``answer``): the same counts are read from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifier.judge.faults.windows import Window


@dataclass
class HoldTally:
    """One client's (and transactional id's) requests a hold rule kept, and their fate."""

    client_id: str
    transactional_id: str | None
    held: int = 0
    #: released into the event the rule waits for (its ``release_on``, then its marker)
    on_event: int = 0
    #: released at the rule's time bound or its removal: the event never came
    at_bound: int = 0
    #: the broker's answers to the requests released into the event
    answered: int = 0
    #: error code (as text, JSON's keys) -> answers with it
    errors: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: dict) -> HoldTally:
        return cls(str(doc.get("client_id") or ""), doc.get("transactional_id"),
                   int(doc.get("held", 0)), int(doc.get("on_event", 0)),
                   int(doc.get("at_bound", 0)), int(doc.get("answered", 0)),
                   {str(k): int(v) for k, v in (doc.get("errors") or {}).items()})


def tallies(w: Window, nemesis: list[dict]) -> list[HoldTally] | None:
    """The hold's counts: its heal detail's ``holds``, else its hold events in the
    history; None when the run recorded neither."""
    if "holds" in w.heal_detail:
        return [HoldTally.from_json(d) for d in w.heal_detail["holds"]]
    events = [op for op in nemesis if op.get("type") == "event" and op.get("id") == w.id]
    if not events:
        return None
    return from_events(events)


def from_events(events: list[dict]) -> list[HoldTally]:
    """The counts from a hold's events (a run recorded before the heal detail had them).
    A request the rule's ``then_hold`` held back (``client_view`` ``delay``) is the
    client's own, delayed: not counted."""
    by: dict[tuple[str, str | None], HoldTally] = {}
    gated: set = set()
    on_event: set = set()
    for op in events:
        d = op.get("detail") or {}
        req = d.get("request") or {}
        hold = d.get("hold")
        key = (str(req.get("client_id") or ""), req.get("transactional_id"))
        if op.get("f") == "hold" and d.get("client_view") == "delay":
            gated.add(hold)
        if hold in gated or op.get("f") not in ("hold", "release", "answer"):
            continue
        t = by.setdefault(key, HoldTally(*key))
        if op["f"] == "hold":
            t.held += 1
        elif op["f"] == "release" and "trigger" in d:  # released by its event
            t.on_event += 1
            on_event.add(hold)
        elif op["f"] == "release":
            t.at_bound += 1
        elif hold in on_event:
            t.answered += 1
            code = error_of(d.get("response") or {})
            k = "?" if code is None else str(code)
            t.errors[k] = t.errors.get(k, 0) + 1
    return list(by.values())


def error_of(summary: dict) -> int | None:
    """A response summary's error code: its own, or a Produce's first partition's that
    is not 0 (0 when all are); None when it names none (the proxy's own reading,
    verifier.harness.kafka_wire.response_error)."""
    if "error_code" in summary:
        return summary["error_code"]
    parts = summary.get("partitions")
    if not parts:
        return None
    return next((p[2] for p in parts if p[2]), 0)


def describe(ts: list[HoldTally], waits_for_event: bool) -> str:
    """What the exposure says a hold did to a column."""
    held = sum(t.held for t in ts)
    if not waits_for_event:
        return f"requests held ({held}; the rule waits for no event)"
    on_event, at_bound = sum(t.on_event for t in ts), sum(t.at_bound for t in ts)
    errors: dict[str, int] = {}
    for t in ts:
        for k, v in t.errors.items():
            errors[k] = errors.get(k, 0) + v
    answers = ", ".join(f"error {k} ×{v}" for k, v in sorted(errors.items()))
    return (f"requests released into the event the rule waits for and answered"
            f"{f' ({answers})' if answers else ''}; {held} held, {on_event} released "
            f"into the event, {at_bound} at the rule's time bound or removal")
