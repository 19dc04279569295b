"""Proxy faults: a rule of the Kafka-aware proxy set for the fault's window.

    ack-loss   drop_response   lose the responses to appends (docs/faults.md)
    latency    latency         delay frames
    blackhole  blackhole       forward nothing
    reset      reset           reset connections
    hold       hold            keep a request until an event releases it
    error-answer error_answer  answer chosen requests with a Kafka error: refused
                               (never forwarded) or replaced (the broker's answer)

The rule's parameters are the fault's params (verifier.harness.faults.rules); its target
is a broker, or ``{"all": true}`` for every broker. With a trigger (``appended`` for
ack-loss, ``held`` for hold, ``forged`` for error-answer) the rule is set at the start
and the start is complete at its first hit; the heal removes the rule and records its
counters, per client too (the exposure of each column: verifier.judge.faults.proxy; an
error answer's hits are the answers it forged).
"""

from __future__ import annotations

import random

from verifier.harness.faults.kinds.base import (
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    broker_of,
    broker_target,
)
from verifier.harness.faults.rules import Rule, RuleError
from verifier.harness.faults.triggers import Gate, NotTriggered
from verifier.judge.faults.proxy import FAMILY
from verifier.rundata.errors import UsageError, WaitTimeout
from verifier.rundata.waiting import wait_until


def probe_rule_hit(proxy, rule_id: int) -> tuple[dict | None, str]:
    """(the rule's counters once it acted, or None; why not)."""
    rule = next((r for r in proxy.status().get("rules", []) if r.get("id") == rule_id), None)
    if rule is None:
        raise NotTriggered(f"proxy rule {rule_id} is gone")
    if rule.get("hits", 0) < 1:
        return None, f"the rule matched {rule.get('matched', 0)} and acted on none"
    return {"first_hit": True, "matched": rule.get("matched"), "hits": rule.get("hits")}, ""


def start_proxy_rule(fault: ScheduledFault, env: FaultEnv, state: dict,
                     gate: Gate | None = None) -> dict:
    """Set the fault's proxy rule. With a trigger (``appended``, ``held``, ``forged``) the
    rule is set under the gate's lock and the start is complete at its first hit; without
    one within the limit the rule is removed again and the fault is not applied."""
    proxy = env.require("proxy", fault.kind)
    broker = broker_of(fault, env)
    kind = RULES[fault.kind]
    trigger = fault.trigger
    params = dict(fault.action_params)
    if trigger is not None and trigger.name == "appended":
        params["appended"] = True  # only a response to an append is an ack lost
    if trigger is None:
        rule = proxy.add_rule(kind=kind, broker=broker, **params)
        state["rule"] = rule["id"]
        return {"node": broker, "rule": rule}
    gate = gate or Gate()
    with gate.lock:
        rule = proxy.add_rule(kind=kind, broker=broker, **params)
        state["rule"] = rule["id"]
    try:
        hit = gate.until(trigger, lambda: probe_rule_hit(proxy, rule["id"]))
    except NotTriggered as exc:
        with gate.lock:
            removed = proxy.remove_rule(rule["id"])
        state.clear()
        # the removed rule stays in the history: its transactional id names the one
        # column its missed trigger concerns (verifier.judge.faults.proxy)
        raise NotApplied(f"{exc}; the rule was removed (it matched {removed['matched']})",
                         detail={"node": broker, "rule": removed}) from None
    return {"node": broker, "rule": rule, **hit}


#: how long a hold's heal waits for the broker's answers to what the rule released into
#: its event (a released request is answered within a request's round trip)
ANSWERS_WAIT_S = 5.0


def heal_proxy_rule(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    if fault.kind == "hold":
        _await_answers(env.proxy, state["rule"])
    rule = env.proxy.remove_rule(state["rule"])
    # the rule's final counters: how many responses it dropped, frames it delayed, ...
    out = {"rule": rule["id"], "matched": rule["matched"], "hits": rule["hits"],
           "clients": rule.get("clients", {})}  # per client id: [matched, hits]
    if "holds" in rule:  # per client and transactional id: held, released, answered
        out["holds"] = rule["holds"]
    if "unforged" in rule:  # an error answer: requests chosen, answers not forgeable
        out.update(chosen=rule["chosen"], unforged=rule["unforged"])
    return out


def _await_answers(proxy, rule_id: int) -> None:
    """Before a hold rule is removed: the broker's answers to the requests it released
    into its event (the exposure counts only answered ones), at most ANSWERS_WAIT_S."""
    def answered() -> tuple[bool, int]:
        rule = next((r for r in proxy.status().get("rules", []) if r.get("id") == rule_id),
                    None)
        due = 0 if rule is None else sum(h.get("awaiting", 0) for h in rule.get("holds", []))
        return due == 0, due

    try:
        wait_until(answered, timeout=ANSWERS_WAIT_S, what="the broker's answers to what "
                   "the hold released into its event", expected="none due", interval=0.1,
                   max_interval=0.2)
    except WaitTimeout:
        pass  # unanswered: not counted as acted on


def _rule_params(rule_kind: str):
    """A check of a fault's params as the rule ``rule_kind`` takes them."""
    def check(params: dict) -> None:
        if "kind" in params or "broker" in params:
            raise UsageError("params may not set the rule's kind or broker")
        try:
            Rule.from_json({"kind": rule_kind, **params}, 0)
        except RuleError as exc:
            raise UsageError(str(exc)) from None

    return check


def _seed(params: dict, rng: random.Random) -> None:
    """A probabilistic ack loss or error answer without its own seed gets one from the
    schedule's."""
    if "probability" in params and "seed" not in params:
        params["seed"] = rng.randrange(2**31)


def _kind(name: str, rule: str, triggers: tuple[str, ...] = (), **more) -> Kind:
    return Kind(name, FAMILY, start_proxy_rule, heal_proxy_rule, broker_target(True),
                _rule_params(rule), triggers=triggers, needs="proxy", rule=rule, **more)


KINDS = (_kind("ack-loss", "drop_response", ("appended",), draw=_seed),
         _kind("latency", "latency"), _kind("blackhole", "blackhole"),
         _kind("reset", "reset"), _kind("hold", "hold", ("held",), hold_events=True),
         _kind("error-answer", "error_answer", ("forged",), draw=_seed))
#: fault kind -> the proxy rule kind it sets
RULES = {k.name: k.rule for k in KINDS}
