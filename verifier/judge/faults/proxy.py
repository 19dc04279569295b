"""Proxy faults (ack-loss, latency, blackhole, reset, hold, error-answer) as the verdict
sees them.

A rule on one transactional id (or an error answer to one client id) concerns the column
whose producer uses it, and only that one, whatever came of the rule (a hold whose
trigger never came is recorded with its rule, verifier.harness.faults.kinds.proxy); a rule
that acts on Produce requests of any transactional id concerns every producer column; a
rule on other requests (EndTxn, AddPartitionsToTxn, ...) concerns the columns whose
requests it met, by client id (a user's own ``client.id`` included) or by the
transactional id a request carries (a copy of the coordinator's WriteTxnMarkers is its
producer's column's).

What a rule acted on is the column's requests and responses it matched and acted on: the
rule's per-client counts (heal detail ``clients``, verifier.harness.faults.rules). A hold
that waits for an event acted on what it released into that event and the broker
answered, never on what it merely held or released at its time bound
(:mod:`.hold_counts`). An error-answer acted on the answers it forged and sent to the
column's clients (a refused request's, or the broker's answer replaced), never on the
requests it matched, or chose and could not forge.
"""

from __future__ import annotations

from verifier.judge.faults import hold_counts as H
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.family import (
    API_PRODUCE,
    Family,
    client_counts,
    is_producer_column,
    owns,
)
from verifier.judge.faults.windows import Window


def _rule(w: Window) -> dict:
    return w.start_detail.get("rule") or {}


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    if col.app is not None:  # an application: the rule met its instances' clients
        return _met(w, col)
    if not is_producer_column(col):  # a pipeline is judged on its own driver's faults
        return False
    rule = _rule(w)
    if rule.get("transactional_id"):
        return rule["transactional_id"] in col.transactional_ids or _met(w, col)
    if rule.get("client_id"):  # an error answer to one client's requests
        return owns(col, rule["client_id"]) or _met(w, col)
    if API_PRODUCE in (rule.get("api_keys") or [API_PRODUCE]):
        return True
    return _met(w, col)


def _met(w: Window, col: ColumnSpec) -> bool:
    """The rule met this column's requests (its counts per client, or what it held)."""
    if client_counts(w, col, None)[0] > 0:
        return True
    return any(owns(col, t.client_id, t.transactional_id)
               for t in H.tallies(w, []) or [] if t.held)


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    if w.fault == "hold":
        return _hold_acted_on(w, col, facts)
    if "clients" not in w.heal_detail:
        if w.heal_detail.get("hits") == 0:
            return 0, "requests or responses acted on (none by the rule)"
        return None, "per-client counts not recorded"
    matched, hits = client_counts(w, col, facts)
    return hits, f"requests or responses acted on ({matched} matched)"


def _hold_acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    waits = bool(_rule(w).get("release_on"))
    ts = H.tallies(w, facts.nemesis)
    if ts is None:
        if w.heal_detail.get("hits") == 0:
            return 0, "requests held (none by the rule)"
        if not waits and "clients" in w.heal_detail:
            return client_counts(w, col, facts)[1], "requests held"
        return None, ("what the hold released into its event and the broker answered "
                      "was not recorded")
    mine = [t for t in ts if owns(col, t.client_id, t.transactional_id, facts.client_pid)]
    n = sum(t.answered for t in mine) if waits else sum(t.held for t in mine)
    return n, H.describe(mine, waits)


FAMILY = Family("proxy", ("ack-loss", "latency", "blackhole", "reset", "hold", "error-answer"),
                concerns,
                acted_on, on_load_path=True)
