"""Proxy faults (ack-loss, latency, blackhole, reset, hold) as the verdict sees them.

A proxy rule concerns every producer column when it acts on Produce requests of any
transactional id; a rule on other requests (EndTxn, AddPartitionsToTxn, ...) or on one
transactional id concerns the columns whose requests it met. What it acted on is the
column's requests and responses the rule matched and acted on: the rule's per-client
counts (heal detail ``clients``, verifier.harness.faults.rules).
"""

from __future__ import annotations

from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.family import API_PRODUCE, Family, client_counts
from verifier.judge.faults.windows import Window


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    if col.pipeline is not None:  # a pipeline is judged on its own driver's faults
        return False
    rule = w.start_detail.get("rule") or {}
    keys = rule.get("api_keys") or [API_PRODUCE]
    if API_PRODUCE in keys and not rule.get("transactional_id"):
        return True
    return client_counts(w, col, None)[0] > 0  # the rule met this column's requests


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    if "clients" not in w.heal_detail:
        if w.heal_detail.get("hits") == 0:
            return 0, "requests or responses acted on (none by the rule)"
        return None, "per-client counts not recorded"
    matched, hits = client_counts(w, col, facts)
    return hits, f"requests or responses acted on ({matched} matched)"


FAMILY = Family("proxy", ("ack-loss", "latency", "blackhole", "reset", "hold"), concerns,
                acted_on, on_load_path=True)
