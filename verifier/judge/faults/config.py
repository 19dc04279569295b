"""Broker settings changed for a window (broker-config) as the verdict sees them.

The settings apply to every broker (the admin API, any cluster), so the fault is
counted as a broker fault: every producer column, its sends in flight or invoked in the
window to any partition (the start records no leaders), and for a transactional column
the transactions open in it.
"""

from __future__ import annotations

from verifier.judge.faults import broker
from verifier.judge.faults.family import Family, producer_columns

FAMILY = Family("config", ("broker-config",), producer_columns, broker.acted_on,
                on_load_path=True)
