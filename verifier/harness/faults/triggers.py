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
                                                   that let rows through: faults.spark_faults)
``in-transaction``            producer-kill,       the generator's history ends inside an
                              process-kill         open transaction with at least one send
``appended``                  ack-loss             a Produce response the rule dropped
                                                   answered an append (some partition without
                                                   error): the rule drops only those
``held``                      hold                 the rule held a request
``batch-planned``             process-kill         a pipeline's driver has a batch in flight
                                                   that reads records, planned since its
                                                   latest start (its checkpoint's offsets log,
                                                   not in its commits): a restart asks for
                                                   those offsets again
``pipelines-down``            retention            every pipeline under test's driver is down
                                                   (killed, not restarted yet)
============================  ===================  ===========================================

A kill acts when its state is seen (looked at again under the nemesis's action lock, so
nothing else acts between the look and the kill); a proxy fault's rule is set at the
start and the trigger is its first hit. A trigger that does not come within its limit
leaves the fault **not applied**: the start is recorded ``fail`` with the reason (a proxy
rule set for it is removed), and no heal follows. The nemesis waits in the fault's own
thread, so the other faults keep their times (verifier.harness.faults.nemesis).

The decisions (:func:`mid_batch`, :func:`open_transaction`) are pure; the probes read
the files the processes write.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata.errors import UsageError, VerifierError

#: trigger -> the fault kinds it applies to
TRIGGERS: dict[str, tuple[str, ...]] = {
    "mid-batch": ("process-kill", "checkpoint-lost", "executor-kill", "worker-kill"),
    "in-transaction": ("producer-kill", "process-kill"),
    "appended": ("ack-loss",),
    "held": ("hold",),
    "pipelines-down": ("retention",),
    "batch-planned": ("process-kill",),
}
#: triggers of a fault that acts over a window (a proxy rule): the rule is set at the
#: start and the trigger is its first hit; the limit is at most the window, by default it
#: all, and the heal keeps its time
WINDOW_TRIGGERS = ("appended", "held")
#: a kill's default limit. mid-batch: a restarted driver needs its Spark JVM again and
#: then the backlog's first batch, 20-60 s on a loaded 2-core machine and up to ~2
#: minutes with several pipelines; in-transaction: the generator is inside one most of
#: the time, a few seconds unless it is stalled
DEFAULT_WITHIN_S = {"mid-batch": 120.0, "in-transaction": 30.0, "pipelines-down": 120.0,
                    "batch-planned": 120.0}
#: the longest limit a scenario may ask for (the load's end waits for a pending trigger)
MAX_WITHIN_S = 600.0
PARAMS = ("trigger", "within")
#: how often a waiting trigger looks (a hold lasts 2 s: 20 looks)
POLL_S = 0.1
#: the tail of a producer history read for its latest transaction
HISTORY_TAIL_BYTES = 256 * 1024


class NotTriggered(VerifierError):
    """The trigger did not come within its limit (or the schedule stopped first)."""


@dataclass(frozen=True)
class Trigger:
    name: str
    within_s: float

    @property
    def window(self) -> bool:
        return self.name in WINDOW_TRIGGERS

    def to_json(self) -> dict:
        return {"trigger": self.name, "within": self.within_s}


def split_params(params: dict) -> tuple[dict, dict]:
    """(the trigger's params, the rest: what the fault itself takes)."""
    return ({k: v for k, v in params.items() if k in PARAMS},
            {k: v for k, v in params.items() if k not in PARAMS})


def validate(kind: str, params: dict, duration_low: float | None = None) -> None:
    """UsageError unless ``params``' trigger fits ``kind``: a known trigger for it, a
    limit > 0 (and for a window trigger no longer than the shortest duration)."""
    mine, _ = split_params(params)
    if not mine:
        return
    name = mine.get("trigger")
    if name not in TRIGGERS:
        raise UsageError(f"params.trigger must be one of {sorted(TRIGGERS)}, not {name!r}"
                         if name is not None else "params.within needs params.trigger")
    if kind not in TRIGGERS[name]:
        raise UsageError(f"trigger {name!r} applies to {', '.join(TRIGGERS[name])}, "
                         f"not {kind}")
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


# ----- the pure decisions -------------------------------------------------------------

def parse_marker(text: str) -> dict | None:
    """A hold marker's content (streaming.pipelines.hold.write_marker), or None when it
    is not one (empty: being written, or an older plain timestamp)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "t" in data else None


def mid_batch(marker: dict | None, started_at_s: float | None,
              committed: Callable[[int], bool], written: dict | None = None,
              planned: Callable[[int], int | None] = lambda batch: None) -> bool:
    """Whether the marker shows a batch partly written and not committed *now*: present,
    written since the process's latest start (a SIGKILLed predecessor leaves its marker
    behind), its batch, when named, not in the commit log, and, for a hold in the source
    (one task held while the others run), the driver's word that the others have written
    (``written``: the ``holding.written`` file's content, at or after the marker), and
    not empty (``planned``: the offsets the batch planned to read, None if unknown). An
    empty batch holds too (Spark runs a fresh query's batch 0 on empty ranges and calls
    ``foreachBatch`` on it), but its replay writes nothing twice: in a run on the loaded
    machine (2026-11-27) a kill "mid-batch" of that batch 0 replayed nothing."""
    if marker is None:
        return False
    if started_at_s is not None and float(marker["t"]) < started_at_s:
        return False
    if marker.get("where") == "source" and (
            written is None or float(written.get("t", 0)) < float(marker["t"])):
        return False
    batch = marker.get("batch")
    if not isinstance(batch, int):
        return True
    return not committed(batch) and planned(batch) != 0


def open_transaction(events: list[dict]) -> dict | None:
    """From a producer history's latest lines (file order), the transaction it is inside
    now with at least one send, or None: ``{"txn", "sends", "acked", "session"}``.

    Read backwards: a commit or abort (invoked or completed) of the latest transaction,
    or a new session, means no open transaction; sends of it count until its ``begin``.
    Without its ``begin`` in the lines given (a long transaction), its sends still show
    it open."""
    txn, sends, acked = None, 0, 0
    for e in reversed(events):
        f, kind = e.get("f"), e.get("type")
        if kind == "session":
            break
        if f in ("commit", "abort"):
            if txn is None or e.get("txn") == txn:
                return None
            continue
        if f == "send" and e.get("txn") is not None:
            if txn is None:
                txn = e["txn"]
            if e["txn"] == txn:
                sends += kind == "invoke"
                acked += kind == "ok"
            continue
        if f == "begin":
            if txn is None or e.get("txn") == txn:
                break
    if txn is None or sends < 1:
        return None
    return {"txn": txn, "sends": sends, "acked": acked}


def tail_events(data: bytes, whole: bool) -> list[dict]:
    """The complete JSON lines of a history's tail: the first line dropped unless
    ``whole`` (the read began mid-line), an unterminated last one always (being written)."""
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a line still being written
    if not whole and lines:
        lines.pop(0)
    out = []
    for raw in lines:
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


# ----- the probes: what a process shows now -------------------------------------------

def probe_mid_batch(proc) -> tuple[dict | None, str]:
    """(the state to kill in, or None; why not). ``proc``: a pipeline driver
    (``mid_batch_marker``, ``started_at_ms``, ``checkpoint``)."""
    marker_path = getattr(proc, "mid_batch_marker", None)
    if marker_path is None:
        raise NotTriggered(f"{proc.name} does not say when it is mid-batch")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    try:
        marker = parse_marker(Path(marker_path).read_text())
    except OSError:
        marker = None
    try:  # streaming.pipelines.hold.written_path
        written = parse_marker(Path(f"{marker_path}.written").read_text())
    except OSError:
        written = None
    started = getattr(proc, "started_at_ms", None)
    checkpoint = getattr(proc, "checkpoint", None)

    def committed(batch: int) -> bool:
        return checkpoint is not None and (Path(checkpoint) / "commits" / str(batch)).exists()

    offsets = getattr(proc, "batch_offsets", None) or (lambda batch: None)
    planned: dict[int, int | None] = {}

    def planned_once(batch: int) -> int | None:
        if batch not in planned:
            planned[batch] = offsets(batch)
        return planned[batch]

    if not mid_batch(marker, None if started is None else started / 1000, committed,
                     written, planned_once):
        if marker is not None and marker.get("where") == "source":
            return None, "a batch held, its other tasks still writing"
        if marker is not None and isinstance(marker.get("batch"), int) and \
                planned_once(marker["batch"]) == 0:
            return None, f"batch {marker['batch']} held, but it is empty"
        return None, "no batch held partly written"
    state = {"mid_batch": True, "batch": marker.get("batch"), "hold": marker.get("where")}
    if isinstance(state["batch"], int):
        state["batch_offsets"] = planned_once(state["batch"])
    return state, ""


def probe_in_transaction(proc) -> tuple[dict | None, str]:
    """(the open transaction, or None; why not). ``proc``: a generator whose
    ``history`` is its history file."""
    path = getattr(proc, "history", None)
    if path is None:
        raise NotTriggered(f"{proc.name} has no history to show a transaction in")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - HISTORY_TAIL_BYTES))
            data = f.read()
    except OSError as exc:
        return None, f"its history is not readable ({exc})"
    txn = open_transaction(tail_events(data, whole=size <= HISTORY_TAIL_BYTES))
    if txn is None:
        return None, "no open transaction with a send"
    return {"in_transaction": True, "txn": txn["txn"], "txn_sends": txn["sends"],
            "txn_acked": txn["acked"]}, ""


def probe_rule_hit(proxy, rule_id: int) -> tuple[dict | None, str]:
    """(the rule's counters once it acted, or None; why not)."""
    rule = next((r for r in proxy.status().get("rules", []) if r.get("id") == rule_id), None)
    if rule is None:
        raise NotTriggered(f"proxy rule {rule_id} is gone")
    if rule.get("hits", 0) < 1:
        return None, f"the rule matched {rule.get('matched', 0)} and acted on none"
    return {"first_hit": True, "matched": rule.get("matched"), "hits": rule.get("hits")}, ""


def batch_planned(batches: list[tuple[int, float]], started_at_s: float | None,
                  reads: Callable[[int], int | None],
                  committed: Callable[[int], bool]) -> int | None:
    """The latest batch (of ``batches``: (batch id, when its offsets entry was written,
    s)) if it was planned since ``started_at_s``, reads records (``reads``: offsets it
    planned, None if unknown) and is not committed: the batch a kill now leaves in flight
    (its restart asks for those offsets again); else None."""
    if not batches:
        return None
    batch, t = max(batches)
    if (started_at_s is not None and t < started_at_s) or committed(batch):
        return None
    return batch if reads(batch) else None


def probe_batch_planned(proc) -> tuple[dict | None, str]:
    """A pipeline's driver that planned a batch reading records since its latest start
    (``checkpoint``, ``started_at_ms``, ``batch_offsets``): a kill now leaves a checkpoint
    whose restart asks for those offsets again. Unlike ``mid-batch`` it needs no hold:
    on a loaded machine a batch's tasks can outlast any hold."""
    checkpoint = getattr(proc, "checkpoint", None)
    if checkpoint is None:
        raise NotTriggered(f"{proc.name} has no checkpoint")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    folder = Path(checkpoint) / "offsets"
    try:
        batches = [(int(p.name), p.stat().st_mtime) for p in folder.iterdir()
                   if p.name.isdigit()]
    except OSError:
        batches = []
    started = getattr(proc, "started_at_ms", None)
    found = batch_planned(batches, None if started is None else started / 1000,
                          getattr(proc, "batch_offsets", None) or (lambda batch: None),
                          lambda batch: (Path(checkpoint) / "commits" / str(batch)).exists())
    if found is None:
        return None, "no batch reading records in flight"
    return {"batch": found, "batch_offsets": proc.batch_offsets(found),
            "batch_in_flight": True}, ""


#: triggers whose state the fault that takes it uses up (a held batch ends with its
#: kill): faults waiting for one on the same target take it in turn (Gate.first_in_line)
IN_TURN = frozenset({"mid-batch"})

PROCESS_PROBES = {"mid-batch": probe_mid_batch, "in-transaction": probe_in_transaction,
                  "batch-planned": probe_batch_planned}


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
        """Look every POLL_S until ``probe`` finds its state, at most ``trigger.within_s``;
        then, under the lock and only if the state still holds, ``act(state)`` (state
        plus ``trigger`` and ``waited_s``). NotTriggered at the limit, with the last
        reason."""
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
            if self.stop.wait(min(POLL_S, left)):
                raise NotTriggered(f"the fault schedule stopped before trigger "
                                   f"{trigger.name} came ({why})")


__all__ = ["DEFAULT_WITHIN_S", "Gate", "IN_TURN", "NotTriggered", "PROCESS_PROBES", "TRIGGERS",
           "Trigger", "batch_planned", "max_within", "mid_batch", "open_transaction",
           "parse_marker", "probe_batch_planned", "probe_in_transaction", "probe_mid_batch",
           "probe_rule_hit", "split_params", "tail_events", "trigger_of", "validate"]
