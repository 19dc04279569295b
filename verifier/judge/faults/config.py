"""Broker settings changed for a window (broker-config) as the verdict sees them.

The settings apply to every broker (the admin API, any cluster), so the fault is
counted as a broker fault: every producer column, its sends in flight or invoked in the
window to any partition (the start records no leaders), and for a transactional column
the transactions open in it; an application's columns when it was running, by the
instances that owned partitions (verifier.judge.faults.app_brokers).
"""

from __future__ import annotations

from verifier.judge.faults import app_brokers, broker
from verifier.judge.faults.application import app_of
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.family import Family
from verifier.judge.faults.windows import Window


def counted(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    """An application's instances that owned partitions (:mod:`.app_brokers`), else the
    sends."""
    if app_of(col) is not None:
        return app_brokers.config_acted_on(w, col)
    return broker.acted_on(w, col, facts)


FAMILY = Family("config", ("broker-config",), broker.concerns, counted, on_load_path=True)
