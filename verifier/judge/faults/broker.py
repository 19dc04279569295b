"""Broker faults (broker-kill, broker-pause, network-partition) as the verdict sees them.

They concern every producer column, and an application's columns when it was running
(what they did to its instances: verifier.judge.faults.app_brokers). What one acted on
is the column's sends in flight at its start or invoked inside its window, to partitions
the target broker led when it started (start detail ``leads``; every partition when not
recorded), and for a transactional column the transactions open in the window (a commit
blocked by the fault is acted on too).
"""

from __future__ import annotations

import bisect

from verifier.judge.faults import app_brokers
from verifier.judge.faults.application import app_of
from verifier.judge.faults.facts import ColumnSpec, RunFacts, Sends
from verifier.judge.faults.family import Family, producer_columns
from verifier.judge.faults.windows import Window


def in_flight(sends: Sends, start: int, end: int, parts: set[int] | None) -> int:
    """Sends in flight at ``start`` or invoked in [start, end], to ``parts`` (None: all)."""
    n = 0
    hi = bisect.bisect_right(sends.invoked, end)
    for i in range(hi):
        if parts is not None and sends.partition[i] not in parts:
            continue
        done = sends.done[i]
        if sends.invoked[i] >= start or done is None or done >= start:
            n += 1
    return n


def _led(w: Window, col: ColumnSpec, facts: RunFacts) -> dict[str, set[int]] | None:
    """pid -> partitions the target broker led at the start; None: not recorded."""
    leads = w.start_detail.get("leads")
    if leads is None:
        return None
    led: dict[str, set[int]] = {}
    for pid in col.pids:
        topic = facts.topic_of.get(pid)
        led[pid] = {int(p) for t, p in leads if t == topic}
    return led


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    start = w.start
    end = w.end if w.end is not None else start
    led = _led(w, col, facts)
    n = 0
    for pid in col.pids:
        if pid in facts.sends:
            parts = None if led is None else led[pid]
            n += in_flight(facts.sends[pid], start, end, parts)
    where = "to partitions it led" if led is not None else "to any partition"
    what = f"sends in flight or invoked in the window {where}"
    if col.transactional:  # a commit blocked by the fault is acted on too
        txns = sum(1 for pid in col.pids for x in facts.txns.get(pid, [])
                   if x.begin <= end and (x.end is None or x.end >= start))
        n += txns
        what += f", and {txns} transaction(s) open in it"
    return n, what


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    """Every producer column, and an application's that was running at the start."""
    return producer_columns(w, col, producers_mode) or app_brokers.concerns(w, col)


def counted(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    """An application's instances it reached (:mod:`.app_brokers`), else the sends."""
    if app_of(col) is not None:
        return app_brokers.broker_acted_on(w, col)
    return acted_on(w, col, facts)


FAMILY = Family("broker", ("broker-kill", "broker-pause", "network-partition"),
                concerns, counted, on_load_path=True)
