"""What each instance of a consumer application owned during a fault, and the rebalances
it saw: the fault's exposure per instance (pure; issue 47).

The nemesis records, with the start and with the heal of every fault of a run that has
applications under test, what each instance's state file says then (``owners``:
process ``app/<name>/<i>`` -> ``{pid, assigned, rebalances, alive}``, or None for an
instance that keeps no state file; verifier.harness.faults.kinds.application.owners).
From the two this module derives, per instance:

- ``owned``: the partitions it held at the fault's start or at its end (its state file's
  ``assigned`` at each: the instance's rebalance listener writes it), ``at_start`` and
  ``at_end`` apart. Two looks, not a trace: a partition it held only in between is not
  seen;
- ``rebalances``: the rebalances it saw from the start to the end (its counter's rise,
  counted by its rebalance listener as each rebalance it took part in ends: the Java
  presets' assigned callback, which incremental rebalancing calls for a member that only
  gains partitions too; kafka-python's revoked callback, which it calls before every
  rejoin); an instance restarted
  in between (a new ``pid``) counts from its restart (``restarted``). For a kill the end
  is once the group has taken the restarted instance back, not the restart itself (the
  heal waits for it: verifier.harness.faults.kinds.application), since the rebalances a
  kill causes come after the restart;
- ``state``: False when it keeps no state file (a user's service): nothing is known; an
  instance seen at one end only before it wrote its file (added by ``scale-out``) owned
  nothing known then (``seen``).

Where the fault acts on instances (a kill, a pause, a coordinator kill, scaling) these
say whom it found holding what; where it acts on brokers or the proxy they say which
instances were at work while it lasted. The verdict's count stays the family's
(verifier.judge.faults); this is beside it in ``verdict.json``'s exposure
(``instances``), the report's exposure cells and the fault summary.
"""

from __future__ import annotations

#: the start's and the heal's detail key the nemesis writes the snapshot under
KEY = "owners"


def _app_and_instance(process: str) -> tuple[str, int] | None:
    parts = process.split("/")
    if len(parts) != 3 or parts[0] != "app" or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2])


def per_instance(start_detail: dict, heal_detail: dict) -> dict[str, list[dict]]:
    """App name -> one entry per instance seen at the start or the end (by instance
    number); {} when the fault's records have no snapshot (a run without applications,
    or recorded before it)."""
    before = start_detail.get(KEY) or {}
    after = heal_detail.get(KEY) or {}
    out: dict[str, list[dict]] = {}
    for process in sorted(set(before) | set(after), key=lambda p: (_app_and_instance(p)
                                                                     or ("", -1))):
        which = _app_and_instance(process)
        if which is None:
            continue
        app, instance = which
        b, a = before.get(process), after.get(process)
        entry: dict = {"instance": instance}
        if b is None and a is None:
            if process in before and process in after:
                entry["state"] = False  # keeps no state file: nothing known
            else:  # at one end only, its file not written yet (just added by scale-out)
                entry.update(owned=[], at_start=[], at_end=[], rebalances=None,
                             seen="start" if process in before else "end")
            out.setdefault(app, []).append(entry)
            continue
        at_start = sorted((b or {}).get("assigned") or ())
        at_end = sorted((a or {}).get("assigned") or ())
        entry.update(owned=sorted(set(at_start) | set(at_end)), at_start=at_start,
                     at_end=at_end)
        if b is not None and a is not None:
            restarted = b.get("pid") != a.get("pid")
            seen = int(a.get("rebalances") or 0) - (0 if restarted else
                                                    int(b.get("rebalances") or 0))
            entry["rebalances"] = max(0, seen)
            if restarted:
                entry["restarted"] = True
        else:  # seen at one end only (added or stopped by the fault): not counted
            entry["rebalances"] = None
            entry["seen"] = "start" if a is None else "end"
        out.setdefault(app, []).append(entry)
    return out


def entry_text(e: dict) -> str:
    """One instance, short: ``i0 2p 1rb`` (owned 2 partitions, saw 1 rebalance); ``i0 ?``
    without a state file; ``r`` after the rebalances when it was restarted in between."""
    if e.get("state") is False:
        return f"i{e['instance']} ?"
    rb = e.get("rebalances")
    return (f"i{e['instance']} {len(e.get('owned') or ())}p "
            f"{'?' if rb is None else rb}rb{'r' if e.get('restarted') else ''}")


def cell_text(entries: list[dict] | None) -> str:
    """The instances of one application in a report cell: ``i0 2p 1rb, i1 2p 0rb``."""
    return ", ".join(entry_text(e) for e in entries or ())


def long_text(app: str, entries: list[dict]) -> str:
    """One application's instances for the fault summary: which partitions each owned at
    the fault's start and end, and the rebalances it saw."""
    parts = []
    for e in entries:
        if e.get("state") is False:
            parts.append(f"{app}/{e['instance']} keeps no state file")
            continue
        owned = ",".join(map(_short, e.get("at_start") or ())) or "none"
        if e.get("at_end") != e.get("at_start"):
            owned += f" -> {','.join(map(_short, e.get('at_end') or ())) or 'none'}"
        rb = e.get("rebalances")
        seen = ("rebalances not known (seen at the " + e.get("seen", "?") + " only)"
                if rb is None else f"{rb} rebalance(s)"
                + (" since its restart" if e.get("restarted") else ""))
        parts.append(f"{app}/{e['instance']} owned {owned}, {seen}")
    return "; ".join(parts)


def _short(partition: str) -> str:
    """A partition without its topic's run prefix (``<run>.idempotent-0`` ->
    ``idempotent-0``): the summary's line stays readable."""
    return partition.rsplit(".", 1)[-1]


def rebalances_total(entries: list[dict] | None) -> int | None:
    """The rebalances an application's instances saw, summed (None: none counted)."""
    known = [e["rebalances"] for e in entries or () if e.get("rebalances") is not None]
    return sum(known) if known else None
