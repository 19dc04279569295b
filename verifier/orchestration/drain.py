"""The drain phase (DESIGN §2): wait until the log is stable and the observer has read it,
partition by partition, for as long as the readers make progress.

Two conditions, decided per (topic, partition) on every look:

1. **stable**: its read_committed end offset (the LSO) equals its read_uncommitted end
   offset (the high watermark). Until then an open transaction holds read_committed
   readers back there.
2. **observed**: each observer query's *position* (streaming.progress: the end offset of
   the last batch its sink completely wrote, position semantics, last + 1) has reached the
   partition's end at its level: the high watermark at read_uncommitted, the LSO at
   read_committed (nothing past it is visible there). Position, not "highest offset
   written": when a partition ends in transaction markers or aborted records, the
   highest offset written stays below the end for ever, but the batch that covered them
   still moves the position past them.

Both are looked at together, so a partition whose transaction never ends (a hanging
transaction) holds back only itself: the others are compared, and complete once read.

**How long.** The drain completes when every partition is stable and observed. Until the
deadline (``deadline_s``: the scenario's transaction timeout + abort scan + slack) it
waits. Past it, it goes on while something still behind advances: a query behind whose
position, planned batch or written rows moved, or an unstable partition whose LSO
moved, within the last ``stall_s`` (half the deadline, at least :data:`MIN_STALL_S`: a
batch on a loaded machine takes seconds to tens of seconds, and nothing moves while it
runs). It stops when everything still behind has stalled, and in any case at
``cap_s`` = :data:`CAP_FACTOR` x the deadline, so no run drains for ever. What it stopped
on, with the offsets each reader stopped at, is in ``RUN/drain.json``.

The decision is pure (:func:`behind`, :class:`Movement`, :func:`decide`); :func:`drain` only
looks at the brokers and the progress files. On a stop a :class:`DrainIncomplete` (a
:class:`~verifier.rundata.errors.WaitTimeout`) carries the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from streaming.progress import checkpoint_dir, read_progress
from verifier.harness.topics import end_offsets, log_start_offsets
from verifier.rundata.checkpoint import Offsets, offset_log_batches
from verifier.rundata.errors import WaitTimeout
from verifier.rundata.formats import header, read_json, write_json_atomic
from verifier.rundata.layout import layout
from verifier.rundata.vocab import ISOLATIONS as ISOLATION_LEVELS
from verifier.rundata.waiting import GiveUp, wait_until

DRAIN_FORMAT = "drain"
READ_COMMITTED, READ_UNCOMMITTED = ISOLATION_LEVELS
#: past the deadline the drain goes on while there is progress, up to this many deadlines
CAP_FACTOR = 3.0
#: the shortest time without any movement that counts as stalled
MIN_STALL_S = 20.0
#: how often the brokers' end offsets are asked for (the progress files: every look)
BROKERS_EVERY_S = 2.0
OPEN_TXN = "open transaction (LSO < high watermark)"
OBSERVER_BEHIND = "observer behind"


# -- the decision (pure) ----------------------------------------------------------------


def behind(ends: dict[str, Offsets], positions: dict[str, Offsets],
           isolations: tuple[str, ...]) -> list[dict]:
    """What is not complete yet, per partition: an open transaction (LSO < high
    watermark), and each query whose position is below the partition's end at its level
    (the LSO at read_committed, the high watermark at read_uncommitted)."""
    committed, uncommitted = ends.get(READ_COMMITTED, {}), ends.get(READ_UNCOMMITTED, {})
    out = [{"topic": t, "partition": p, "reason": OPEN_TXN,
            "read_committed_end": committed.get((t, p)), "read_uncommitted_end": hw}
           for (t, p), hw in sorted(uncommitted.items()) if committed.get((t, p)) != hw]
    for iso in isolations:
        mine = positions.get(iso, {})
        for (t, p), end in sorted((ends.get(iso) or {}).items()):
            if mine.get((t, p), 0) < end:
                out.append({"topic": t, "partition": p, "isolation": iso,
                            "reason": OBSERVER_BEHIND,
                            "observer_position": mine.get((t, p), 0), "end_offset": end})
    return out


def mover(entry: dict) -> str:
    """Whose movement an entry of :func:`behind` waits on: the query of its level, or
    the partition's LSO (an open transaction ends when its producer or the coordinator
    ends it)."""
    if "mover" in entry:  # another reader's (a pipeline's)
        return entry["mover"]
    if "isolation" in entry:
        return f"observer/{entry['isolation']}"
    if "topic" in entry:
        return f"lso/{entry['topic']}-{entry['partition']}"
    return "brokers"  # a look that failed: nothing is known to move


@dataclass
class Movement:
    """When each mover last moved (seconds since the drain began): a query when its
    position, the batch it planned or the rows it wrote changed; an LSO when it changed.
    The first look counts as a move (nothing is known to be stalled yet)."""

    marks: dict[str, object] = field(default_factory=dict)
    moved_at: dict[str, float] = field(default_factory=dict)

    def look(self, now: float, marks: dict[str, object]) -> None:
        for key, mark in marks.items():
            if key not in self.marks or self.marks[key] != mark:
                self.moved_at[key] = now
            self.marks[key] = mark

    def quiet_for(self, key: str, now: float) -> float:
        return now - self.moved_at.get(key, 0.0)


def marks_of(ends: dict[str, Offsets], positions: dict[str, Offsets],
             activity: dict[str, object]) -> dict[str, object]:
    """The values whose change is progress: per query its positions and ``activity``
    (the batch it planned last, the rows written), per partition its LSO."""
    out: dict[str, object] = {f"lso/{t}-{p}": lso
                              for (t, p), lso in (ends.get(READ_COMMITTED) or {}).items()}
    for iso, pos in positions.items():
        out[f"observer/{iso}"] = (tuple(sorted(pos.items())), activity.get(iso))
    return out


def decide(late: list[dict], movement: Movement, now: float, deadline_s: float,
           stall_s: float, cap_s: float) -> str:
    """``complete`` (nothing behind), ``wait``, or why it stops: ``stalled`` (past the
    deadline, nothing behind moved for ``stall_s``) or ``cap`` (past ``cap_s``)."""
    if not late:
        return "complete"
    if now < deadline_s:
        return "wait"
    if now >= cap_s:
        return "cap"
    if any(movement.quiet_for(mover(b), now) < stall_s for b in late):
        return "wait"
    return "stalled"


def stall_for(deadline_s: float) -> float:
    """How long without movement counts as stalled: half the deadline, at least
    :data:`MIN_STALL_S` (never longer than the deadline itself)."""
    return min(deadline_s, max(MIN_STALL_S, deadline_s / 2))


# -- the result ---------------------------------------------------------------------------


@dataclass
class DrainResult:
    """Outcome of a drain; ``behind`` lists what was not complete (empty when completed),
    each entry with ``stalled_s``, how long its mover had not moved when the drain ended."""

    completed: bool
    deadline_s: float
    cap_s: float = 0.0
    stall_s: float = 0.0
    #: "complete", "stalled" (nothing behind moved for stall_s) or "cap"
    ended: str = "complete"
    elapsed_s: float = 0.0
    #: {isolation: {(topic, partition): end offset}} from the last look at the brokers
    end_offsets: dict[str, Offsets] = field(default_factory=dict)
    #: {isolation: {(topic, partition): observer position}} from the progress files
    positions: dict[str, Offsets] = field(default_factory=dict)
    behind: list[dict] = field(default_factory=list)
    #: {mover: seconds since the drain began of its last move}
    moved_at: dict[str, float] = field(default_factory=dict)
    #: {(topic, partition): log start offset} after the drain: the earliest offset the
    #: plain reader (reading from the beginning next) can fetch; above 0 where retention
    #: deleted records (the retention fault), which no reader can read any more
    log_start: Offsets = field(default_factory=dict)

    @property
    def extended_s(self) -> float:
        """How far past the deadline progress kept the drain going."""
        return max(0.0, self.elapsed_s - self.deadline_s)

    def to_json(self) -> dict:
        def nest(offsets: Offsets) -> dict:
            return {f"{t}-{p}": o for (t, p), o in sorted(offsets.items())}

        return {
            **header(DRAIN_FORMAT),
            "completed": self.completed, "ended": self.ended,
            "deadline_s": self.deadline_s, "cap_s": self.cap_s, "stall_s": self.stall_s,
            "elapsed_s": round(self.elapsed_s, 3), "extended_s": round(self.extended_s, 3),
            "end_offsets": {iso: nest(o) for iso, o in self.end_offsets.items()},
            "observer_positions": {iso: nest(o) for iso, o in self.positions.items()},
            "readers_moved_at": {k: round(v, 3) for k, v in sorted(self.moved_at.items())
                                 if k.startswith("observer/")},
            "behind": self.behind,
            **({"log_start_offsets": nest(self.log_start)} if any(self.log_start.values())
               else {}),
        }  # fmt: skip


class DrainIncomplete(WaitTimeout):
    """The drain stopped incomplete; ``details["drain"]`` is the :class:`DrainResult`."""

    @property
    def result(self) -> DrainResult:
        return self.details["drain"]


# -- the loop -----------------------------------------------------------------------------


def drain(bootstrap_servers: str, topics: list[str], run_dir: Path, timeout: float,
          isolation_levels: tuple[str, ...] = ISOLATION_LEVELS, *,
          cap_factor: float = CAP_FACTOR, stall_s: float | None = None,
          interval: float = 0.5, **client_config) -> DrainResult:
    """Look at the brokers and the observer until :func:`decide` says complete or stop;
    ``timeout`` is the deadline (the module doc says how progress extends it)."""
    started = time.monotonic()
    stall = stall_for(timeout) if stall_s is None else stall_s
    result = DrainResult(completed=False, deadline_s=timeout, cap_s=cap_factor * timeout,
                         stall_s=stall)
    movement = Movement()
    asked = [-BROKERS_EVERY_S]  # when the brokers were last asked (seconds since the start)
    expected = ("every partition stable (LSO == high watermark) and every observer query's "
                "position at its end offset, or nothing behind moving")

    def probe() -> tuple[bool, list[dict]]:
        now = time.monotonic() - started
        problem = None
        try:
            if now - asked[0] >= BROKERS_EVERY_S:  # a new consumer per ask: not every look
                result.end_offsets = {iso: end_offsets(bootstrap_servers, topics, iso,
                                                       **client_config)
                                      for iso in ISOLATION_LEVELS}  # fmt: skip
                asked[0] = now
            result.positions = {iso: _position(run_dir, iso) for iso in isolation_levels}
            activity = {iso: _activity(run_dir, iso) for iso in isolation_levels}
            movement.look(now, marks_of(result.end_offsets, result.positions, activity))
            late = behind(result.end_offsets, result.positions, isolation_levels)
        except Exception as exc:  # noqa: BLE001 - a broker not answering is "not yet"
            problem = f"{type(exc).__name__}: {exc}"
            late = [*result.behind, {"reason": problem}]  # the last look's, and this
        result.behind = [b for b in late if "topic" in b]  # drain.json names partitions
        result.ended = decide(late, movement, now, timeout, stall, result.cap_s)
        result.elapsed_s, result.moved_at = now, dict(movement.moved_at)
        if result.ended in ("stalled", "cap"):
            for b in result.behind:
                b["stalled_s"] = round(movement.quiet_for(mover(b), now), 3)
            why = {"stalled": f"nothing behind moved for {stall:g}s past the "
                              f"{timeout:g}s deadline",
                   "cap": f"still moving at the cap ({result.cap_s:g}s)"}[result.ended]
            observed = f"{why}; {describe(result.behind)}"
            raise GiveUp(DrainIncomplete(
                what="the drain", expected=expected, seconds=round(now, 1),
                observed=observed + (f"; last look: {problem}" if problem else ""),
                details={"drain": result}))
        return result.ended == "complete", late

    # the decision ends the wait (complete, stalled or at the cap); the helper's own
    # timeout is only a backstop a little past the cap
    try:
        wait_until(probe, timeout=result.cap_s + 2 * BROKERS_EVERY_S, what="the drain",
                   expected=expected, describe=describe, interval=interval,
                   max_interval=interval)
    except DrainIncomplete:
        raise
    except WaitTimeout as exc:  # a look that hung past the cap
        result.ended, result.elapsed_s = "cap", time.monotonic() - started
        raise DrainIncomplete(what=exc.what, expected=exc.expected, observed=exc.observed,
                              seconds=exc.seconds, details={"drain": result}) from None
    result.completed = True
    return result


def drain_to_file(bootstrap_servers: str, topics: list[str], run_dir: Path, timeout: float,
                  **kwargs) -> DrainResult:
    """:func:`drain`, writing ``RUN/drain.json`` whether it completes or not, with the
    partitions' log start offsets looked up at its end."""
    client_config = {k: v for k, v in kwargs.items() if k not in DRAIN_OPTIONS}
    try:
        result = drain(bootstrap_servers, topics, run_dir, timeout, **kwargs)
    except DrainIncomplete as exc:
        exc.result.log_start = _log_start(bootstrap_servers, topics, client_config)
        write_drain(run_dir, exc.result)
        raise
    result.log_start = _log_start(bootstrap_servers, topics, client_config)
    write_drain(run_dir, result)
    return result


#: drain()'s own keyword arguments (the rest are the clients' settings)
DRAIN_OPTIONS = ("isolation_levels", "cap_factor", "stall_s", "interval")


def _log_start(bootstrap_servers: str, topics: list[str], client_config: dict) -> Offsets:
    """Each partition's log start offset; {} when the brokers do not answer (then no
    record counts as deleted)."""
    try:
        return log_start_offsets(bootstrap_servers, topics, **client_config)
    except Exception:  # noqa: BLE001 - drain.json is written either way
        return {}


def write_drain(run_dir: Path, result: DrainResult) -> Path:
    return write_json_atomic(layout(run_dir).drain, result.to_json())


def read_drain(run_dir: Path) -> dict:
    """drain.json, of this version or the one before (format 1: one phase for the whole
    log, docs/formats.md §4.2)."""
    return read_json(layout(run_dir).drain, DRAIN_FORMAT, versions=(1,))


def _position(run_dir: Path, isolation: str) -> Offsets:
    progress = read_progress(run_dir, isolation)
    return dict(progress.position) if progress else {}


def _activity(run_dir: Path, isolation: str) -> tuple:
    """What moves while a query works: the last batch it planned (Spark writes
    ``offsets/<N>`` before batch N runs) and the last one its sink wrote, with the rows."""
    planned = offset_log_batches(checkpoint_dir(run_dir, isolation))
    progress = read_progress(run_dir, isolation)
    return (planned[-1] if planned else None,
            (progress.batch, progress.rows) if progress else None)


def describe(late: list[dict]) -> str:
    """Name the partitions still behind (capped: a big run can have hundreds)."""
    parts = []
    for b in late[:20]:
        if "topic" not in b:
            parts.append(str(b.get("reason")))
            continue
        where = f"{b['topic']}-{b['partition']}"
        if "isolation" in b:
            parts.append(f"{where} {b['isolation']} at {b['observer_position']}"
                         f"/{b['end_offset']}")
        else:
            parts.append(f"{where} LSO {b['read_committed_end']} < HW "
                         f"{b['read_uncommitted_end']}")
    more = f" and {len(late) - 20} more" if len(late) > 20 else ""
    return f"{len(late)} partition(s) behind: " + ", ".join(parts) + more
