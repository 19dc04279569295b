"""What the broker and config families' faults did to a consumer application (pure;
issue 47).

A broker killed, paused or cut off, or every broker's settings changed, acts on an
application under test as on a producer: its instances read their input partitions from
the partitions' leaders and write their output partitions through theirs. Such a fault
concerns an application's columns when the application was running at its start (the
nemesis's ``owners`` snapshot, verifier.judge.faults.owners, names its instances), and
it acted on the instances it could reach:

- ``broker-kill``, ``broker-pause``, ``network-partition``: the instances that owned, at
  the fault's start, an input partition the broker led (start detail ``leads``), and,
  when the broker led one of the application's output partitions (``leads`` of its
  output topic, named in ``app_outputs``), every instance that owned a partition then
  (each may write to it). Its group's coordinator and its transaction coordinators are
  not looked at here (``group-coordinator-kill`` is the broker kill that does);
- ``broker-config``: every instance that owned a partition at the fault's start or end
  (the settings apply to every broker).

An instance that keeps no state file says nothing of what it owned: the count is then
not measured (None), so the column cannot PASS on that fault.
"""

from __future__ import annotations

from verifier.judge.faults.application import app_of
from verifier.judge.faults.facts import ColumnSpec
from verifier.judge.faults.owners import per_instance
from verifier.judge.faults.windows import Window


def instances(w: Window, col: ColumnSpec) -> list[dict] | None:
    """The application column's instances at the fault (None: not an application's
    column, or the application was not running then)."""
    app = app_of(col)
    if app is None:
        return None
    return per_instance(w.start_detail, w.heal_detail).get(app)


def concerns(w: Window, col: ColumnSpec) -> bool:
    """Whether the fault found the column's application running (not applied: whether
    the run had it, from the column's kind alone)."""
    if app_of(col) is None:
        return False
    return w.start is None or bool(instances(w, col))


def _unknown(entries: list[dict]) -> bool:
    return any(e.get("state") is False for e in entries)


def broker_acted_on(w: Window, col: ColumnSpec) -> tuple[int | None, str]:
    """The instances a broker fault reached (see the module's docstring)."""
    entries = instances(w, col) or []
    leads = w.start_detail.get("leads")
    node = w.start_detail.get("node")
    if leads is None:
        return None, f"which partitions node {node} led at the start was not recorded"
    if _unknown(entries):
        return None, ("the application keeps no state file: which partitions its "
                      "instances owned is not known")
    led = {f"{t}-{p}" for t, p in leads}
    output = (w.start_detail.get("app_outputs") or {}).get(app_of(col))
    out_led = sorted(f"{t}-{p}" for t, p in leads if t == output)
    hit = []
    for e in entries:
        mine = sorted(led & set(e.get("at_start") or ()))
        if mine or (out_led and e.get("at_start")):
            hit.append(f"instance {e['instance']}"
                       + (f" (input {', '.join(mine)})" if mine else ""))
    where = f"node {node} led " + (f"output partition(s) {', '.join(out_led)}" if out_led
                                   else "none of its output partitions")
    if output is None:
        where = f"node {node}'s leadership of its output partitions was not recorded"
    return len(hit), (f"instances owning, at the start, an input partition the broker led "
                      f"or writing to an output partition it led: "
                      f"{', '.join(hit) if hit else 'none'}; {where}")


def config_acted_on(w: Window, col: ColumnSpec) -> tuple[int | None, str]:
    """The instances that owned partitions while every broker's settings changed."""
    entries = instances(w, col) or []
    if _unknown(entries):
        return None, ("the application keeps no state file: which partitions its "
                      "instances owned is not known")
    busy = [e for e in entries if e.get("owned")]
    return len(busy), (f"instances owning partitions while every broker's settings were "
                       f"changed ({len(entries)} running)")
