"""Faults of the consumer applications under test (instance-kill) as the verdict sees
them (pure; issue 47).

An instance kill concerns the columns of the applications whose instances it killed
(both isolation levels of each: ``app:<name>@<isolation>``), and no producer or pipeline
column. What it acted on is what the killed instances said they were doing at the kill
(their state file, read just before the SIGKILL, verifier.harness.faults.kinds
.application): ``at_risk``, the records of the batch between its two steps (the
commit-before copier: committed, not yet written; commit-after: written, not yet
committed; transactional: in the open transaction), as the instance last said it before
it died (``state_at_kill``, read after the SIGKILL; the look before it when the two
agree), and none where that state says the batch's second step had begun (``step``
``writing`` or ``committing``: the kill may not have undone it, so it is not counted as
acted on). An application that keeps no state
file (a user's own service) says nothing: its exposure is not measured (count None), so
its column cannot PASS on that fault (DESIGN §10), and the report says why.
"""

from __future__ import annotations

from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.family import Family
from verifier.judge.faults.windows import Window
from verifier.rundata.columns import APP_PREFIX

KINDS = ("instance-kill",)
#: a batch's second step under way (the state's ``step``): the write (commit-before) or
#: the commit (commit-after, transactional) may already have happened, so a kill may not
#: undo the batch (the at-risk trigger waits past it: verifier.harness.faults.kinds)
SECOND_STEPS = ("writing", "committing")


def killed(w: Window) -> list[dict]:
    """The instances a kill's start detail says it killed: {app, instance, state}."""
    return [k for k in w.start_detail.get("killed", ()) if isinstance(k, dict)]


def app_of(col: ColumnSpec) -> str | None:
    """The application a column shows (``app:<name>@<isolation>``), or None."""
    if not col.mode.startswith(APP_PREFIX):
        return None
    return col.mode.removeprefix(APP_PREFIX)


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    app = app_of(col)
    if app is None:
        return False
    named = (w.target or {}).get("app")
    if w.start is None:  # not applied: whom it was meant for
        return named in (None, app)
    return any(k.get("app") == app for k in killed(w))


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    app = app_of(col)
    mine = [k for k in killed(w) if k.get("app") == app]
    states = [k.get("state_at_kill") or k.get("state") for k in mine]
    if not mine:
        return 0, "no instance of it killed"
    if any(not isinstance(s, dict) or "at_risk" not in s for s in states):
        return None, ("the application keeps no state file: what its instance was doing "
                      "at the kill is not known")
    late = [s for s in states if s.get("step") in SECOND_STEPS]
    n = sum(int(s["at_risk"]) for s in states if s not in late)
    return n, (f"records between a batch's two steps (processed and committed apart) at "
               f"the kill of {len(mine)} instance(s)"
               + (f"; {len(late)} killed in the batch's second step, not counted"
                  if late else ""))


FAMILY = Family("application", KINDS, concerns, acted_on)
