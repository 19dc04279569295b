"""Faults of a consumer application's group as the verdict sees them (pure; issue 47).

    instance-pause   an instance stopped (SIGSTOP) past the group's session timeout, so
                     its partitions move to another instance, then resumed (SIGCONT): a
                     zombie. Under exactly-once its writes after the resume must be
                     refused (fenced by the group's generation, KIP-447)

A pause concerns the columns of the applications whose instances it paused (both
isolation levels of each), and no producer or pipeline column. What it acted on is
counted from the fault's own records (verifier.harness.faults.kinds.group): the batch
the instance had in flight at the pause (its state file's ``at_risk``), only if some of
its partitions were taken by another instance before the resume (``moved``): a pause
shorter than the session timeout moves nothing and tests no zombie. What the instance
did after the resume (``after``: its writes or commits ``refused``, with the errors it
reported; its batch ``completed``; or nothing seen) is said in the exposure's text, so
the report says whether the zombie was fenced; the verdict itself is the expectation
table's, on the duplicates an unfenced zombie writes.

    group-coordinator-kill   the broker that coordinates the applications' groups
                             killed (and restarted)

It concerns the columns of the applications it targeted. It acted on an application
whose group the killed broker coordinated (start detail ``groups``: app -> node): the
count is its instances that held partitions at the kill (each must find the new
coordinator before it can commit); the text adds the records they had in flight and the
errors they reported before the broker was back (heal detail ``errors``). An application
whose group another broker coordinated was not acted on (0).
"""

from __future__ import annotations

from verifier.judge.faults.application import app_of
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.family import Family
from verifier.judge.faults.windows import Window

KINDS = ("instance-pause", "group-coordinator-kill", "scale-out", "scale-in")
#: the kinds counted by the rebalances the instances saw
SCALING = ("scale-out", "scale-in")

#: what a resumed instance did (heal detail ``resumed[].after``)
REFUSED, COMPLETED, UNSEEN, EXITED = "refused", "completed", "nothing-seen", "exited"


def paused(w: Window) -> list[dict]:
    """The instances a pause's start detail says it stopped: {app, instance, state}."""
    return [k for k in w.start_detail.get("paused", ()) if isinstance(k, dict)]


def resumed(w: Window) -> dict[str, dict]:
    """Process name -> what the heal saw of it: ``moved`` (its partitions another
    instance held before the resume), ``after`` and ``errors`` (after the resume)."""
    return {r["process"]: r for r in w.heal_detail.get("resumed", ())
            if isinstance(r, dict) and "process" in r}


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    app = app_of(col)
    if app is None:
        return False
    if w.start is None:  # not applied: whom it was meant for
        return (w.target or {}).get("app") in (None, app)
    if w.fault == "group-coordinator-kill":
        return app in (w.start_detail.get("groups") or {})
    if w.fault in SCALING:
        acted = w.start_detail.get("added") or w.start_detail.get("stopped") or ()
        return any(isinstance(a, dict) and a.get("app") == app for a in acted)
    return any(k.get("app") == app for k in paused(w))


def fenced_text(entry: dict) -> str:
    """What the report says of one resumed instance: fenced or not."""
    after = entry.get("after")
    if after == REFUSED:
        kinds = sorted({e.get("type", "?") for e in entry.get("errors", ())})
        return f"its writes after the resume were refused ({', '.join(kinds)}): fenced"
    if after == COMPLETED:
        later = sorted({e.get("type", "?") for e in entry.get("errors", ())})
        return ("its batch went through after the resume" +
                (f" (then refused: {', '.join(later)})" if later else "") + ": NOT fenced")
    if after == EXITED:
        return "it exited after the resume"
    return "nothing it did after the resume was seen"


def coordinator_acted_on(w: Window, app: str | None) -> tuple[int | None, str]:
    node, coord = w.start_detail.get("node"), (w.start_detail.get("groups") or {}).get(app)
    if coord is None:
        return None, "its group's coordinator at the kill is not known"
    hit = roles_hit(w, app, node)
    if coord == node:
        hit.insert(0, "its group coordinator")
    if not hit:
        return 0, (f"its group's coordinator was node {coord}, and none of its transaction "
                   f"coordinators or output leaders was the killed node {node}")
    states = (w.start_detail.get("instances") or {}).get(app) or []
    if not states or any(not isinstance(s, dict) or "assigned" not in s for s in states):
        return None, ("the application keeps no state file: which instances held "
                      "partitions at the kill is not known")
    holding = [s for s in states if s.get("assigned")]
    at_risk = sum(int(s.get("at_risk") or 0) for s in states)
    errors = (w.heal_detail.get("errors") or {}).get(app) or []
    kinds = sorted({e.get("type", "?") for e in errors if isinstance(e, dict)})
    said = (f"{len(errors)} error(s) reported before the broker was back "
            f"({', '.join(kinds)})" if errors else "no error reported before the broker "
            "was back")
    return len(holding), (f"instances holding partitions when node {node} was killed "
                          f"({', '.join(hit)}), {at_risk} records in flight; {said}")


def roles_hit(w: Window, app: str | None, node) -> list[str]:
    """What else of the application the killed node was (start detail ``roles``)."""
    roles = (w.start_detail.get("roles") or {}).get(app) or {}
    txn = sorted(t for t, n in (roles.get("txn") or {}).items() if n == node)
    out = sorted(p for p, n in (roles.get("out") or {}).items() if n == node)
    return ([f"the transaction coordinator of {', '.join(txn)}"] if txn else []) + \
        ([f"the leader of output partition(s) {', '.join(out)}"] if out else [])


def rebalances_seen(w: Window, app: str | None) -> tuple[int | None, str]:
    """The rebalances the application's instances that stayed up saw between the
    fault's start and the end of its heal (their state files' counters)."""
    before = w.start_detail.get("rebalances_before", w.start_detail.get("rebalances"))
    after = w.heal_detail.get("rebalances")
    if after is None:
        return None, "its heal's rebalance counts were not recorded"
    mine = [n for n in before or {} if n.split("/")[1:2] == [app]]
    if any(before[n] is None or after.get(n) is None for n in mine):
        return None, ("the application keeps no state file: the rebalances its "
                      "instances saw are not known")
    n = sum(max(0, after[p] - before[p]) for p in mine)
    what = "one added, then removed" if w.fault == "scale-out" else "one removed, then back"
    return n, f"rebalances seen by {len(mine)} instance(s) that stayed up ({what})"


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    app = app_of(col)
    if w.fault == "group-coordinator-kill":
        return coordinator_acted_on(w, app)
    if w.fault in SCALING:
        return rebalances_seen(w, app)
    mine = [k for k in paused(w) if k.get("app") == app]
    if not mine:
        return 0, "no instance of it paused"
    states = [k.get("state") for k in mine]
    if any(not isinstance(s, dict) or "at_risk" not in s for s in states):
        return None, ("the application keeps no state file: what its instance was doing "
                      "at the pause is not known")
    seen = resumed(w)
    if not seen:
        return None, "its resume was not recorded (the heal did not finish)"
    n, parts = 0, []
    for k in mine:
        entry = seen.get(k.get("process"), {})
        moved = entry.get("moved") or []
        if not moved:
            parts.append(f"instance {k.get('instance')}: none of its partitions moved while "
                         "it was paused (shorter than the session timeout?)")
            continue
        n += int(k["state"]["at_risk"])
        parts.append(f"instance {k.get('instance')}: {k['state']['at_risk']} records in "
                     f"flight, {len(moved)} partition(s) taken by another instance; "
                     + fenced_text(entry))
    return n, ("records of a batch in flight in an instance paused while its partitions "
               "moved (a zombie): " + "; ".join(parts))


FAMILY = Family("group", KINDS, concerns, acted_on)
