"""Triggers: a fault that waits for the state that makes it bite, with a limit.

    [[faults]]
    kind = "process-kill"
    target = { process = "pipeline" }
    start = 15
    duration = 3
    params = { trigger = "mid-batch", within = 120 }

From its planned start the fault waits, at most ``within`` seconds, for its trigger:

============================  ===================  ===========================================
trigger                       kinds                the state
============================  ===================  ===========================================
``mid-batch``                 process-kill,        a pipeline's driver holds a batch that is
                              checkpoint-lost,     partly written and not committed (its
                              executor-kill,       ``holding`` marker, streaming.pipelines.hold;
                              worker-kill          for an executor or worker kill, a task of it
                                                   that let rows through: faults.kinds.spark)
``in-transaction``            producer-kill,       the generator's history ends inside an
                              process-kill         open transaction with at least one send
                                                   (its commit or abort not answered yet)
``copy-committed``            producer-kill        the generator is inside a transaction with
                                                   a send, begun after it committed one since
                                                   the broker answered a copy the proxy held
                                                   (a hold's ``client_view = "copy"``)
``every-column``              observer-kill        the observer's batches in flight (planned,
                                                   not committed) hold records of every
                                                   producer column, each at one of its
                                                   isolation levels
``appended``                  ack-loss             a Produce response the rule dropped
                                                   answered an append (some partition without
                                                   error): the rule drops only those
``held``                      hold                 the rule held a request
``forged``                    error-answer         the rule sent its first forged error
                                                   answer (a refused request's, or a
                                                   broker's answer replaced)
``batch-planned``             process-kill         a pipeline's driver has a batch in flight
                                                   that reads records, planned since its
                                                   latest start (its checkpoint's offsets log,
                                                   not in its commits): a restart asks for
                                                   those offsets again
``at-risk``                   instance-kill,       an application's instance says (its state
                              instance-pause       file) it is between a batch's two steps:
                                                   processed and not committed, or committed
                                                   and not processed, or in a transaction
``pipelines-down``            retention            every pipeline under test's driver is down
                                                   (killed, not restarted yet)
============================  ===================  ===========================================

A kill acts when its state is seen (looked at again under the nemesis's action lock, so
nothing else acts between the look and the kill); a proxy fault's rule is set at the
start and the trigger is its first hit. A trigger that does not come within its limit
leaves the fault **not applied**: the start is recorded ``fail`` with the reason (a proxy
rule set for it is removed), and no heal follows. The nemesis waits in the fault's own
thread, so the other faults keep their times (verifier.harness.faults.nemesis).

Which kinds take which trigger is each kind's own (``Kind.triggers``,
verifier.harness.faults.kinds); what a process shows is read by the probes
(verifier.harness.faults.probes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from verifier.rundata.errors import UsageError, VerifierError

#: every trigger a fault may wait for (which kinds take it: their ``Kind.triggers``)
NAMES = ("mid-batch", "in-transaction", "appended", "held", "pipelines-down", "batch-planned",
         "every-column", "copy-committed", "at-risk", "forged")
#: triggers of a fault that acts over a window (a proxy rule): the rule is set at the
#: start and the trigger is its first hit; the limit is at most the window, by default it
#: all, and the heal keeps its time
WINDOW_TRIGGERS = ("appended", "held", "forged")
#: a kill's default limit. mid-batch: a restarted driver needs its Spark JVM again and
#: then the backlog's first batch, 20-60 s on a loaded 2-core machine and up to ~2
#: minutes with several pipelines; in-transaction: the generator is inside one most of
#: the time, a few seconds unless it is stalled; every-column: the observer's two queries
#: plan a batch every 0.5 s while records arrive, a restarted one within a minute
DEFAULT_WITHIN_S = {"mid-batch": 120.0, "in-transaction": 30.0, "pipelines-down": 120.0,
                    "batch-planned": 120.0, "every-column": 60.0, "copy-committed": 30.0,
                    "at-risk": 60.0}
#: the longest limit a scenario may ask for (the load's end waits for a pending trigger)
MAX_WITHIN_S = 600.0
PARAMS = ("trigger", "within")
#: how often a waiting trigger looks (a hold lasts 2 s: 20 looks)
POLL_S = 0.1
#: triggers that look more often: an open transaction can last a few tens of ms on a
#: machine where transactions are short, and a look reads only its history's latest lines;
#: an application's window is its 200 ms of processing, a look one small state file
POLL_S_OF = {"in-transaction": 0.01, "copy-committed": 0.01, "at-risk": 0.01}
#: triggers whose state the fault that takes it uses up (a held batch ends with its
#: kill): faults waiting for one on the same target take it in turn (Gate.first_in_line)
IN_TURN = frozenset({"mid-batch"})


class NotTriggered(VerifierError):
    """The trigger did not come within its limit (or the schedule stopped first)."""


@dataclass(frozen=True)
class Trigger:
    name: str
    within_s: float

    @property
    def window(self) -> bool:
        return self.name in WINDOW_TRIGGERS

    @property
    def poll_s(self) -> float:
        return POLL_S_OF.get(self.name, POLL_S)

    def to_json(self) -> dict:
        return {"trigger": self.name, "within": self.within_s}


def split_params(params: dict) -> tuple[dict, dict]:
    """(the trigger's params, the rest: what the fault itself takes)."""
    return ({k: v for k, v in params.items() if k in PARAMS},
            {k: v for k, v in params.items() if k not in PARAMS})


def validate(kind: str, params: dict, duration_low: float | None,
             takers: Mapping[str, Sequence[str]]) -> None:
    """UsageError unless ``params``' trigger fits ``kind``: a known trigger that
    ``takers`` (trigger -> the kinds that take it) gives ``kind``, a limit > 0 (and for a
    window trigger no longer than the shortest duration)."""
    mine, _ = split_params(params)
    if not mine:
        return
    name = mine.get("trigger")
    if name not in NAMES:
        raise UsageError(f"params.trigger must be one of {sorted(NAMES)}, not {name!r}"
                         if name is not None else "params.within needs params.trigger")
    kinds = takers.get(name, ())
    if kind not in kinds:
        raise UsageError(f"trigger {name!r} applies to {', '.join(kinds)}, not {kind}")
    within = mine.get("within")
    if within is None:
        return
    if isinstance(within, bool) or not isinstance(within, int | float) or \
            not 0 < within <= MAX_WITHIN_S:
        raise UsageError(f"params.within must be a number of seconds in (0, "
                         f"{MAX_WITHIN_S:g}], not {within!r}")
    if name in WINDOW_TRIGGERS and duration_low is not None and within > duration_low:
        raise UsageError(f"params.within ({within:g} s) is longer than the fault's "
                         f"duration ({duration_low:g} s): a {name!r} trigger must come "
                         "while the rule is set")


def trigger_of(kind: str, params: dict, duration: float) -> Trigger | None:
    """The trigger a scheduled fault's params ask for, its limit resolved."""
    name = params.get("trigger")
    if name is None:
        return None
    within = params.get("within")
    if within is None:
        within = duration if name in WINDOW_TRIGGERS else DEFAULT_WITHIN_S[name]
    return Trigger(str(name), float(within))


def max_within(faults) -> float:
    """The longest limit of a schedule's triggers (0 without any)."""
    return max((t.within_s for f in faults
                if (t := trigger_of(f.kind, f.params, f.duration)) is not None), default=0.0)


# ----- the wait -----------------------------------------------------------------------

class Gate:
    """How a triggered start waits: the nemesis's action lock (taken to re-check and
    act), its stop event, and whether the state, once seen, is this wait's to take
    (``first_in_line``, asked under the lock): faults waiting for the same state of the
    same target take it in the order they began to wait. Without that the executor-loss
    run of 2026-11-28 09:41 gave dedup-state's first held task to its worker kill
    (planned at 60 s) while its executor kill (planned at 12 s, waiting since) waited on
    until its 300 s ran out: not applied, the column NOT EXERCISED."""

    def __init__(self, lock: threading.Lock | None = None,
                 stop: threading.Event | None = None,
                 first_in_line: Callable[[], bool] | None = None) -> None:
        self.lock = lock or threading.Lock()
        self.stop = stop or threading.Event()
        self.first_in_line = first_in_line or (lambda: True)

    def until(self, trigger: Trigger, probe: Callable[[], tuple[dict | None, str]],
              act: Callable[[dict], dict] | None = None) -> dict:
        """Look every ``trigger.poll_s`` until ``probe`` finds its state, at most
        ``trigger.within_s``; then, under the lock and only if the state still holds,
        ``act(state)`` (state plus ``trigger`` and ``waited_s``). NotTriggered at the
        limit, with the last reason."""
        t0 = time.monotonic()
        why = "not looked yet"
        while True:
            found, why = probe()
            if found is not None:
                with self.lock:
                    found, why = probe()
                    if found is not None and not self.first_in_line():
                        found, why = None, ("an earlier fault waits for the same state of "
                                            "this target")
                    if found is not None:
                        found = {**found, "trigger": trigger.name,
                                 "waited_s": round(time.monotonic() - t0, 2)}
                        return act(found) if act is not None else found
            left = trigger.within_s - (time.monotonic() - t0)
            if left <= 0:
                raise NotTriggered(f"trigger {trigger.name} did not come within "
                                   f"{trigger.within_s:g} s ({why})")
            if self.stop.wait(min(trigger.poll_s, left)):
                raise NotTriggered(f"the fault schedule stopped before trigger "
                                   f"{trigger.name} came ({why})")




__all__ = ["DEFAULT_WITHIN_S", "Gate", "IN_TURN", "NAMES", "NotTriggered", "Trigger",
           "max_within", "split_params", "trigger_of", "validate"]
