"""Exposure: what of each column every fault that concerns it acted on (DESIGN §10).

A verdict is only as good as the faults that reached it: an ack loss that dropped none of
a column's responses, a driver kill between two batches, a broker kill while the column's
generator stood still, all leave a PASS that shows nothing. For each fault window and each
column it concerns this module counts, from data the run already records, what the fault
acted on; which columns a fault concerns and how it is counted is its family's
(verifier.judge.faults: proxy rules' per-client counts, sends in flight around a broker
fault, a kill's unacknowledged sends or uncommitted batch, records retention deleted).
For faults on the producers' path it also compares the column's sends per second inside
the window against outside every window: a column whose load stalled (below a tenth of
its own rate) while the fault was active, and that was not sending when it started, was
not tested by it, unless the stall is the fault's own doing (verifier.judge.liveness: the
column was sending just before, and the broker that died was its transaction coordinator
or a partition's leader): then it was tested, and a stall that outlasts the heal is a
liveness finding (``liveness``); a later fault the stuck client could not meet is masked
by it (``masked_by``) and left out of the column's ``exercised``.

Pure: plain values in (:class:`~verifier.judge.faults.facts.RunFacts`, gathered by
:mod:`verifier.judge.exposure_facts`), a dict per column out, which ``verdict.json`` holds
under ``exposure`` (docs/formats.md). The verdict rule is
:func:`verifier.judge.verdict.apply_exposure`: PASS needs every concerning fault to have
been exercised.
"""

from __future__ import annotations

from verifier.judge import faults as F
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.owners import cell_text
from verifier.judge.faults.windows import Window, windows
from verifier.judge.liveness import caused_stall, finding_text, why_not_caused
from verifier.judge.load_rates import STALL_RATIO, active_at, load_rates


def column_exposure(col: ColumnSpec, facts: RunFacts, wins: list[Window],
                    producers_mode: dict[str, str]) -> dict:
    """The ``exposure`` entry of one column of verdict.json."""
    invoked = sorted(t for pid in col.pids if pid in facts.sends
                     for t in facts.sends[pid].invoked)  # fmt: skip
    applied = [(w.start, w.end if w.end is not None else w.start) for w in wins
               if w.start is not None and F.on_load_path(w.fault)]  # fmt: skip
    rate_out, rates = load_rates(invoked, applied)
    entries = []
    #: liveness findings so far: (fault, the stall's start, its first answer or None)
    stuck: list[tuple[Window, int, int | None]] = []
    for w in wins:
        if not F.concerns(w, col, producers_mode):
            continue
        n, what = F.acted_on(w, col, facts)
        e = {"id": w.id, "fault": w.fault, "target": w.target or {}, "start": w.start,
             "end": w.end, "applied": {"ok": True, "fail": False}.get(w.outcome),
             "acted": n, "what": what}  # fmt: skip
        owned = F.instances(w, col)
        if owned:  # an application's instances: what each owned, the rebalances seen
            e["instances"] = owned
        reasons = []
        if w.outcome == "fail":
            reasons.append(f"{_name(w)} was not applied: {w.error}")
        elif n == 0:
            reasons.append(f"{_name(w)} acted on none of its operations ({what})")
        if w.start is not None and F.on_load_path(w.fault) and col.pids:
            r_in = rates.get((w.start, w.end if w.end is not None else w.start), 0.0)
            e["rate_in"] = round(r_in, 2)
            e["rate_out"] = None if rate_out is None else round(rate_out, 2)
            active = active_at(invoked, w.start, rate_out)
            low = rate_out is not None and r_in < STALL_RATIO * rate_out
            stalled = low and not active
            e["stalled"] = stalled
            # a client sending at the start may still be stuck by the fault: a finding too
            caused = caused_stall(w, col, facts, invoked) if low else None
            if caused is not None:  # the fault stopped the client: it did reach it
                e["caused_stall"] = caused
                if caused["finding"]:
                    e["liveness"] = finding_text(w, caused)
                    answered = caused["first_answered"]
                    stuck.append((w, caused["last_send"],
                                  None if answered is None else answered["answered"]))
            elif stalled:
                reasons.append(f"{_name(w)}: the column's load stalled while it was active "
                               f"({r_in:.1f}/s inside against {rate_out:.1f}/s outside), "
                               "and it was not sending when the fault started ("
                               f"{why_not_caused(w, col, facts, invoked)})")
        masked = _masked_by(w, stuck) if reasons else None
        if masked is not None:  # the client was stuck: no fault could reach it then
            e.update(masked_by=masked.id, exercised=None,
                     masked=f"{'; '.join(reasons)} (the column made no progress then: the "
                            f"liveness finding of {_name(masked)})")
            entries.append(e)
            continue
        if w.outcome == "info":
            e["exercised"] = None  # may not have been applied: UNKNOWN says so
        elif n is None and not reasons:
            e["exercised"] = None  # not measured: never PASS (verdict.apply_exposure)
            reasons.append(f"{_name(w)}: what it acted on was not measured ({what})")
        else:
            e["exercised"] = not reasons
        if reasons:
            e["why"] = "; ".join(reasons)
        entries.append(e)
    verdicts = [e["exercised"] for e in entries if e.get("masked_by") is None]
    exercised = (False if False in verdicts else None if None in verdicts else True)
    out = {"exercised": exercised, "faults": entries,
           "reasons": [e["why"] for e in entries if e["exercised"] is False],
           "unknown": [e["why"] for e in entries if e["exercised"] is None and e.get("why")],
           "rate": None if rate_out is None else round(rate_out, 2)}
    liveness = [e["liveness"] for e in entries if e.get("liveness")]
    if liveness:
        out["liveness"] = liveness
    return out


def _name(w: Window) -> str:
    return f"fault {w.fault} #{w.id}"


def _masked_by(w: Window, stuck: list[tuple[Window, int, int | None]]) -> Window | None:
    """The earlier fault whose liveness finding covers ``w``'s attempt: the column made no
    progress from before that fault until after ``w`` was tried (a producer kill whose
    in-transaction trigger never came because the producer was stuck), or None."""
    if w.tried is None:
        return None
    for fault, since, answered in stuck:
        if since <= w.tried and (answered is None or answered > w.tried):
            return fault
    return None


def exposure(facts: RunFacts) -> dict[str, dict]:
    """Column name -> its exposure (see the module's docstring)."""
    wins = windows(facts.nemesis)
    producers_mode = {pid: c.mode for c in facts.columns for pid in c.pids}
    return {c.name: column_exposure(c, facts, wins, producers_mode) for c in facts.columns}


def summary(entry: dict) -> str:
    """One short line for a cell: what the faults acted on, or ``no fault``."""
    faults = entry.get("faults") or []
    if not faults:
        return "no fault"
    parts = []
    for e in faults:
        n = e.get("acted")
        mark = "" if e.get("exercised") is not False else " ✗"
        if e.get("liveness"):
            mark += " liveness"
        elif e.get("masked_by") is not None:
            mark += f" masked by #{e['masked_by']}"
        owned = f" [{cell_text(e['instances'])}]" if e.get("instances") else ""
        parts.append(f"{e['fault']} #{e['id']}: {'?' if n is None else n}{owned}{mark}")
    return "; ".join(parts)
