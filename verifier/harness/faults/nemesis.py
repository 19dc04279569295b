"""The nemesis: runs a fault schedule in a thread and records it as history.

    with Nemesis(schedule, env, run_dir / "nemesis.jsonl", run_id) as nemesis:
        ... run the load ...
        nemesis.wait_done(timeout)        # every scheduled heal has run
    # leaving the block always heals everything, also on Ctrl-C, SIGTERM or an error

Each fault action is an ``invoke`` line and one completion line (docs/formats.md §3):
``ok`` with a ``detail``, ``fail`` (not applied) or ``info`` (unknown: it may have been
applied). The final heal-all is recorded as ``fault: "all"`` with ``id: 0``.

A fault with a trigger (``params.trigger``, verifier.harness.faults.triggers) waits for
the state that makes it bite in a thread of its own, so the schedule's other faults keep
their times: its ``invoke`` line is written at the planned start, its completion when the
trigger came and the fault acted (``ok``, the kill's heal moved as far) or when the limit
passed (``fail``: not applied, no heal). While it waits it is listed by
:meth:`Nemesis.describe_active` as waiting.

A ``hold`` fault's proxy rule acts on its own: while the schedule has one, its hold,
release and answer events are copied into the history as they come
(verifier.harness.faults.nemesis_history.HoldEvents).

What each kind does at its start and heal, what it needs and when it waits is its own
(verifier.harness.faults.kinds); the nemesis only runs the schedule.
"""

from __future__ import annotations

import heapq
import logging
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from verifier.harness.faults import kinds
from verifier.harness.faults.kinds import FaultEnv, NotApplied, ScheduledFault, Settling
from verifier.harness.faults.kinds.application import owners
from verifier.harness.faults.kinds.process import SERVING_DEFER_S, SERVING_RECHECK_S
from verifier.harness.faults.nemesis_history import HoldEvents, NemesisHistory, now_ms
from verifier.harness.faults.recovery import heal_everything
from verifier.harness.faults.spec import Schedule
from verifier.harness.faults.triggers import IN_TURN, Gate
from verifier.judge.faults.owners import KEY as OWNERS
from verifier.rundata.errors import UsageError
from verifier.rundata.waiting import wait_until

log = logging.getLogger(__name__)

#: A start later than planned by more than this (an action before it took long) moves its
#: heal by as much, so the fault keeps its duration; its ``ok`` line says ``late_s``.
LATE_S = 1.0
#: how often a heal whose start still waits for its trigger looks again
TRIGGER_RECHECK_S = 0.25


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while the block runs, so ``with`` blocks
    (the heal-all) unwind on ``kill`` as they do on Ctrl-C. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)  # as the CLI names it: SIGTERM

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Nemesis:
    """Runs one schedule against one environment; see the module docstring."""

    def __init__(self, schedule: Schedule, env: FaultEnv, history_path: Path, run_id: str,
                 processes_known: bool = True, defer_limit_s: float = SERVING_DEFER_S) -> None:
        kinds.check_env({f.kind for f in schedule.faults}, env)
        if processes_known:
            missing = {f.target["process"] for f in schedule.faults
                       if "process" in f.target} - set(env.processes)
            if missing:
                raise UsageError(f"schedule names unknown processes {sorted(missing)}")
        self.schedule = schedule
        self.env = env
        self.history_path = Path(history_path)
        self.run_id = run_id
        self.history: NemesisHistory | None = None
        self.active: dict[int, tuple[ScheduledFault, dict]] = {}
        #: faults whose start waits for its trigger, each in its thread: id -> (fault,
        #: state, thread)
        self.waiting: dict[int, tuple[ScheduledFault, dict, threading.Thread]] = {}
        #: fault id -> how far its start moved (held back, late, or a trigger's wait):
        #: its heal follows
        self._moved: dict[int, float] = {}
        self._t0 = 0.0
        self.killed: set[str] = set()
        self.errors: list[str] = []
        #: proxy rule id -> its fault, for hold events that arrive after the heal
        self._healed_rules: dict[int, ScheduledFault] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one fault action at a time, also during heal-all
        self._thread: threading.Thread | None = None
        #: heals whose target is still coming back (kinds.Settling), waited for off the
        #: schedule's thread
        self._settling: list[threading.Thread] = []
        self._signals = sigterm_as_interrupt()
        self._holds = any(kinds.KINDS[f.kind].hold_events for f in schedule.faults) \
            and env.proxy is not None
        self.hold_events: HoldEvents | None = None
        #: how long a kill may wait for its process to serve (its kind's not_ready)
        self.defer_limit_s = defer_limit_s

    # ----- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> Nemesis:
        self.history = NemesisHistory(self.history_path, self.run_id, self.schedule.seed)
        self._signals.__enter__()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._thread.start()
        if self._holds:
            self.hold_events = HoldEvents(self.env.proxy, self.history, self._lock,
                                          self._stop, self._faults_by_rule)
            self.hold_events.start()
        return self

    def __exit__(self, exc_type=None, *exc) -> None:
        try:
            if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
                # the tool is being stopped: the environment this run owns (proxy,
                # cluster, namespace) is torn down next, so no restart is waited for
                self.stop(timeout=2)
                return
            self.stop()
            self.heal_all()
            if self.hold_events is not None:
                self.hold_events.finish()
        finally:
            self._signals.__exit__(None, None, None)
            if self.history is not None:
                self.history.close()

    def _faults_by_rule(self) -> dict[int, ScheduledFault]:
        """Proxy rule id -> the fault that set it: active, waiting or healed (a hold's
        events can come after its heal). Under the action lock."""
        faults = {state.get("rule"): fault for fault, state in self.active.values()}
        faults.update({state.get("rule"): fault
                       for fault, state, _ in list(self.waiting.values())})
        faults.update(self._healed_rules)
        return faults

    def stop(self, timeout: float = 300) -> None:
        """Stop starting faults; wait for the action in progress (a broker restart can
        take a while) so heal-all does not race it."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        if self._thread is not None:
            self._thread.join(timeout)
        for _, _, t in list(self.waiting.values()):  # each ends at the stop event
            t.join(max(0.0, deadline - time.monotonic()))
        self._join_settling(max(0.0, deadline - time.monotonic()))

    def wait_done(self, timeout: float) -> None:
        """Wait until the whole schedule (every heal, settled) has run."""
        wait_until(lambda: (self._thread is not None and not self._thread.is_alive()
                            and not any(t.is_alive() for t in self._settling), None),
                   timeout=timeout, what="the fault schedule to finish",
                   expected="every scheduled fault started and healed")

    def _join_settling(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in list(self._settling):
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    # ----- the schedule ------------------------------------------------------------------

    def _run(self) -> None:
        """The timeline in time order. A start whose process is not serving yet
        (its kind's ``not_ready``) is held back, SERVING_RECHECK_S at a time and at most
        ``defer_limit_s``, and its heal moves with it: the fault keeps its duration, and
        its ``ok`` line says how long it waited and why."""
        t0 = self._t0 = time.monotonic()
        # the timeline's index keeps its order (heals first) among equal times
        queue = [(at, n, action, fault)
                 for n, (at, action, fault) in enumerate(self.schedule.timeline())]
        heapq.heapify(queue)
        since: dict[int, tuple[float, str]] = {}  # fault id -> (first held back at, why)
        moved = self._moved
        while queue:
            at, n, action, fault = heapq.heappop(queue)
            # Waiting on the stop event paces the schedule and lets stop() cut it short.
            if self._stop.wait(max(0.0, t0 + at - time.monotonic())):
                return
            if action == "heal" and fault.id in self.waiting:  # its trigger has not come yet
                heapq.heappush(queue, (at + TRIGGER_RECHECK_S, n, action, fault))
                continue
            if action == "heal" and fault.heal_at + moved.get(fault.id, 0.0) > at:
                heapq.heappush(queue, (fault.heal_at + moved[fault.id], n, action, fault))
                continue
            if kinds.KINDS[fault.kind].on_brokers:
                self._join_settling()  # a broker still restarting: one broker action at a time
            with self._lock:
                if action == "start":
                    now = time.monotonic() - t0
                    why = kinds.not_ready(fault, self.env)
                    first = since.get(fault.id, (now, ""))[0]
                    if why is not None and now - first < self.defer_limit_s:
                        since[fault.id] = (first, why)
                        moved[fault.id] = now + SERVING_RECHECK_S - fault.start
                        heapq.heappush(queue, (now + SERVING_RECHECK_S, n, action, fault))
                        continue
                    held, late = None, now - fault.start
                    if fault.id in since:
                        moved[fault.id] = late
                        held = (now - first, since[fault.id][1] + (
                            "" if why is None else f" (killed after {now - first:.0f} s anyway)"))
                    elif late > LATE_S:  # an action before it took long: keep the duration
                        moved[fault.id] = late
                    late = late if late > LATE_S and held is None else None
                    if fault.trigger is not None:
                        self._start_triggered(fault, held, late)
                    else:
                        self._start(fault, held, late)
                elif fault.id in self.active:
                    self._heal(fault)

    def _record(self, f: str, fault: ScheduledFault | None, fn, settled=None) -> str:
        """Write invoke, run ``fn``, write ok / fail / info; return that outcome.

        ``fn`` may return :class:`Settling`: with ``settled`` (a callback, run
        under the action lock once the target is back) its wait runs in a thread of its
        own, which writes the completion line, and the outcome is ``settling``; without,
        it is waited for here."""
        base = {"f": f, "fault": fault.kind if fault else "all",
                "target": fault.target if fault else {}, "id": fault.id if fault else 0}
        self.history.write({"type": "invoke", **base, "t": now_ms()})
        try:
            detail = fn()
        except NotApplied as exc:
            self.history.write({"type": "fail", **base, "t": now_ms(), "error": str(exc),
                                **({"detail": exc.detail} if exc.detail else {})})
            return "fail"
        except Exception as exc:  # noqa: BLE001 - recorded; the run goes on and heals
            log.exception("nemesis: %s %s failed", f, base["fault"])
            error = f"{type(exc).__name__}: {exc}"
            self.errors.append(f"{f} {base['fault']} #{base['id']}: {error}")
            self.history.write({"type": "info", **base, "t": now_ms(), "error": error})
            return "info"
        if isinstance(detail, Settling):
            if settled is not None:
                t = threading.Thread(target=self._settle, args=(base, detail, settled),
                                     name=f"nemesis-settle-{base['id']}", daemon=True)
                self._settling.append(t)
                t.start()
                return "settling"
            return self._settle(base, detail)
        self.history.write({"type": "ok", **base, "t": now_ms(),
                            "detail": self._with_owners(base, detail)})
        return "ok"

    def _with_owners(self, base: dict, detail: dict | None) -> dict | None:
        """A fault's detail plus what each application instance owned then (its state
        file's partitions and rebalances: verifier.judge.faults.owners), in a run that
        has applications under test."""
        if not base["id"]:
            return detail
        try:
            snap = owners(self.env.processes)
        except Exception:  # noqa: BLE001 - a look at state files never costs the record
            log.exception("nemesis: the instances' state files could not be read")
            return detail
        return {**(detail or {}), OWNERS: snap} if snap else detail

    def _settle(self, base: dict, settling: Settling, settled=None) -> str:
        """Wait for a settling action's target; write its ok (or info) line."""
        try:
            more = settling.wait()
        except Exception as exc:  # noqa: BLE001 - recorded; heal-all covers the fault
            log.exception("nemesis: %s %s did not settle", base["f"], base["fault"])
            error = f"{type(exc).__name__}: {exc}"
            self.errors.append(f"{base['f']} {base['fault']} #{base['id']}: {error}")
            self.history.write({"type": "info", **base, "t": now_ms(), "error": error,
                                "detail": settling.detail})
            return "info"
        self.history.write({"type": "ok", **base, "t": now_ms(), "detail": self._with_owners(
            base, {**settling.detail, **(more or {})})})
        if settled is not None:
            with self._lock:
                settled()
        return "ok"

    def _start(self, fault: ScheduledFault, held: tuple[float, str] | None = None,
               late: float | None = None) -> None:
        start = kinds.KINDS[fault.kind].start
        state: dict = {}

        def act() -> dict:
            detail = start(fault, self.env, state)
            if held is not None:  # the process did not serve at the planned time
                detail = {**(detail or {}), "held_back_s": round(held[0], 1),
                          "held_back_because": held[1]}
            if late is not None:  # started late, its heal moved as much
                detail = {**(detail or {}), "late_s": round(late, 1)}
            return detail

        if self._record("start", fault, act) != "fail":
            self.active[fault.id] = (fault, state)  # ok or info: it must be healed
            if "process" in state:
                self.killed.add(state["process"])

    def _start_triggered(self, fault: ScheduledFault, held: tuple[float, str] | None,
                         late: float | None) -> None:
        """Start ``fault`` in a thread of its own that waits for its trigger (called under
        the action lock; the thread takes it to act). A kill's heal moves by the wait, so
        the process stays down its duration; a proxy rule's window keeps its heal."""
        start = kinds.KINDS[fault.kind].start
        state: dict = {}

        def first_in_line() -> bool:  # under the lock; self.waiting keeps the wait order
            if fault.trigger.name not in IN_TURN:
                return True
            return next((f.id for f, _, _ in self.waiting.values()
                         if f.target == fault.target and f.trigger.name == fault.trigger.name),
                        fault.id) == fault.id

        gate = Gate(self._lock, self._stop, first_in_line)

        def act() -> dict:
            detail = start(fault, self.env, state, gate)
            if not fault.trigger.window:
                self._moved[fault.id] = time.monotonic() - self._t0 - fault.start
            if held is not None:
                detail = {**detail, "held_back_s": round(held[0], 1),
                          "held_back_because": held[1]}
            if late is not None:
                detail = {**detail, "late_s": round(late, 1)}
            return detail

        def run() -> None:
            outcome = self._record("start", fault, act)
            with self._lock:
                if outcome != "fail":
                    self.active[fault.id] = (fault, state)
                    if "process" in state:
                        self.killed.add(state["process"])
                elif "rule" in state:  # set, then the wait failed in a way it could not undo
                    self.active[fault.id] = (fault, state)
                self.waiting.pop(fault.id, None)
            if outcome == "fail":
                log.warning("nemesis: %s on %s not applied", fault.kind, fault.target)

        t = threading.Thread(target=run, name=f"nemesis-trigger-{fault.id}", daemon=True)
        self.waiting[fault.id] = (fault, state, t)
        t.start()

    def describe_active(self) -> list[str]:
        """The faults acting now, and those waiting for their trigger, as the progress
        line names them: ``process-kill pipeline/x (waiting for mid-batch)``."""
        def name(fault: ScheduledFault) -> str:
            target = fault.target
            what = target.get("process") or target.get("node") or (
                "all" if target.get("all") else next(iter(target), ""))
            return f"{fault.kind} {what}".strip()

        out = [name(f) for f, _ in list(self.active.values()) if f.id]
        out += [f"{name(f)} (waiting for {f.trigger.name})"
                for f, _, _ in list(self.waiting.values())]
        return out

    def _heal(self, fault: ScheduledFault, background: bool = True) -> None:
        heal = kinds.KINDS[fault.kind].heal
        _, state = self.active[fault.id]
        if not state:  # the start failed before it resolved a target: heal-all covers it
            self.active.pop(fault.id)
            return
        if "rule" in state:
            self._healed_rules[state["rule"]] = fault
        def healed() -> None:
            self.active.pop(fault.id, None)
            self.killed.discard(state.get("process", ""))

        # A heal that failed stays active; heal-all's catch-all covers it at the end. A
        # settling one (a broker restarting) is done when its thread calls healed().
        settle = healed if background else None
        if self._record("heal", fault, lambda: heal(fault, self.env, state), settle) == "ok":
            healed()

    def heal_all(self) -> None:
        """Heal what is still active (newest first), then undo anything left over."""
        self._join_settling()  # a settling heal takes the lock when it is done
        with self._lock:
            for fault, _ in sorted(self.active.values(), key=lambda a: -a[0].id):
                self._heal(fault, background=False)
            self._record( "heal", None, lambda: heal_everything(self.env, self.killed))
            self.active.clear()
            self.killed.clear()
