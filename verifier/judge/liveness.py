"""Liveness: a column's stall that the fault itself caused, told apart from a fault that
missed the column (pure; verifier.judge.exposure asks it about every stalled load).

A broker fault can leave a client unable to make progress long after it: kafka-python's
transactional producer whose transaction coordinator was killed sent nothing from the
kill to the end of the load (a CI run of broker-kill-short, 2026-11-29), while the rest
of the cluster served and its coordinator moved to another broker within seconds. Its
load stalled while the fault was active, which the exposure's stall rule alone reads as
"the fault missed the column" (NOT EXERCISED, exit 3). It did not miss it: the column was
sending just before, and the broker that died was one it depended on, so records of it
were at risk when the broker died and the delivery promise was tested. What the stall
shows is about the client's liveness, a finding of its own with its evidence, which does
not change the verdict or the exit code (docs/expectations.md §3, "Liveness").

The stall is the fault's when (1) the column's last send before the fault's start is at
most :data:`BEFORE_S` old, and (2) the fault's target was the transaction coordinator of
one of the column's transactional ids or the leader of one of its partitions (the start
detail's ``coordinators`` and ``leads``; a history without them cannot show it). It is a
liveness finding when moreover (3) the column had no answered send from the fault's start
until :data:`AFTER_S` after the heal (or until the run's load ended, if sooner), at least
:data:`MIN_S` in all. A stall without (1) or (2) is still the fault missing the column.
"""

from __future__ import annotations

import bisect

from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.windows import Window

#: the column "was sending shortly before the fault": a client that stood still longer
#: than this before it (stopped, paused, between bursts of a sparse load) was not
#: stopped by it (as the connection checks' ACTIVE_BEFORE_MS)
BEFORE_S = 10.0
#: how long after the heal a client may take to answer again: the broker is back and
#: ready then (a kill's heal is written once the cluster is), and a coordinator or leader
#: that moved away from it did so seconds before
AFTER_S = 10.0
#: the shortest stall that is a finding: when the load ends soon after the fault, a
#: shorter wait says nothing about the client
MIN_S = 10.0


def depended_on(w: Window, col: ColumnSpec, facts: RunFacts) -> list[str]:
    """What the fault's target broker was to the column when the fault started: "the
    transaction coordinator of <id>", "the leader of <topic> partition(s) 0, 2"."""
    detail = w.start_detail
    node = detail.get("node")
    if node is None:
        return []
    out = [f"the transaction coordinator of {tid}"
           for tid, c in sorted((detail.get("coordinators") or {}).items())
           if c.get("pid") in col.pids and c.get("node") == node]
    topics = {facts.topic_of.get(pid) for pid in col.pids}
    led: dict[str, list[int]] = {}
    for t, p in detail.get("leads") or []:
        if t in topics:
            led.setdefault(t, []).append(int(p))
    for t, parts in sorted(led.items()):
        out.append(f"the leader of {t} partition(s) {', '.join(map(str, sorted(parts)))}")
    return out


def _first_answer(col: ColumnSpec, facts: RunFacts, since: int) -> tuple[int, int] | None:
    """(invoked, answered) of the column's first send invoked at or after ``since`` that
    was answered (completed, whatever the outcome), by answer time; None: none was."""
    best: tuple[int, int] | None = None
    for pid in col.pids:
        sends = facts.sends.get(pid)
        if sends is None:
            continue
        for i in range(bisect.bisect_left(sends.invoked, since), len(sends.invoked)):
            done = sends.done[i]
            if done is not None and (best is None or done < best[1]):
                best = (sends.invoked[i], done)
    return best


def load_end(facts: RunFacts) -> int | None:
    """When the run's load ended, as its producers show it: the latest send of any."""
    ends = [s.invoked[-1] for s in facts.sends.values() if s.invoked]
    return max(ends) if ends else None


def caused_stall(w: Window, col: ColumnSpec, facts: RunFacts,
                 invoked: list[int]) -> dict | None:
    """The evidence that the column's stalled load during fault ``w`` was the fault's own
    doing (see the module's docstring), with ``finding`` true when it is a liveness
    finding; None when the stall is not the fault's (the fault missed the column).
    ``invoked``: the column's send times, sorted."""
    if w.start is None:
        return None
    depends = depended_on(w, col, facts)
    i = bisect.bisect_right(invoked, w.start)
    if not depends or i == 0 or w.start - invoked[i - 1] > BEFORE_S * 1000:
        return None
    last = invoked[i - 1]
    heal = w.end if w.end is not None else w.start
    end = load_end(facts) or w.start
    first = _first_answer(col, facts, w.start)
    limit = min(heal + int(AFTER_S * 1000), end)
    stuck = (first is None or first[1] > limit) and limit - w.start >= MIN_S * 1000
    return {"finding": stuck, "node": w.start_detail.get("node"), "depended_on": depends,
            "last_send": last, "heal": heal, "load_end": end,
            "first_answered": None if first is None else {"invoked": first[0],
                                                          "answered": first[1]},
            "no_progress_s": round(((first[1] if first else end) - last) / 1000, 1)}


def why_not_caused(w: Window, col: ColumnSpec, facts: RunFacts, invoked: list[int]) -> str:
    """Why a stall during ``w`` is not the fault's own doing: how long before it the
    column last sent, and whether the broker was anything to it."""
    i = bisect.bisect_right(invoked, w.start or 0)
    out = ["no send before it" if i == 0 else
           f"its last send {((w.start or 0) - invoked[i - 1]) / 1000:.1f} s before it"]
    detail = w.start_detail
    if not depended_on(w, col, facts):
        out.append("broker {} was neither its transaction coordinator nor a leader of its "
                   "partitions".format(detail.get("node"))
                   if "coordinators" in detail or "leads" in detail
                   else "what the broker was to it was not recorded")
    return "; ".join(out)


def finding_text(w: Window, ev: dict) -> str:
    """One line of a liveness finding, times from the fault's start: "fault broker-kill
    #1 acted on broker 1, the transaction coordinator of r.transactional-0: the column's
    last send was 0.8 s before it, then no answered send until the load ended 11.2 s
    after it (the heal: 9.0 s after it)"."""
    def s(t: int) -> str:
        return f"{(t - w.start) / 1000:.1f} s"

    first = ev["first_answered"]
    after = (f"until the load ended {s(ev['load_end'])} after it" if first is None else
             f"until {s(first['answered'])} after it (a send invoked {s(first['invoked'])} "
             "after it)")
    return (f"fault {w.fault} #{w.id} acted on broker {ev['node']}, "
            f"{' and '.join(ev['depended_on'])}: the column's last send was "
            f"{(w.start - ev['last_send']) / 1000:.1f} s before it, then no answered send "
            f"{after}; the heal came {s(ev['heal'])} after it")
