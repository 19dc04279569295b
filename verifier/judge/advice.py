"""Advice on a client configuration, read from the advice table (DESIGN §10, issue 37).

Pure: settings in, :class:`Advice` out; no client, no Kafka, no Spark. The CLI
(``verifier advise``) reads the files and runs the clients' own validation; ``verifier
chaos`` compares a run's verdicts with the advice (:func:`compare`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from verifier.judge import advice_rules as R
from verifier.judge.expectations import FORBIDDEN, expectation
from verifier.rundata.columns import column_name
from verifier.rundata.vocab import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    HANGING,
    LOST,
    READ_COMMITTED,
    REORDER,
    TORN,
)

KINDS_OF = {  # the anomaly kinds a configuration of each kind answers for
    "producer": (LOST, DUP_SAME, DUP_CROSS, REORDER, ABORTED_READ, TORN, HANGING),
    "consumer": (LOST, DUP_DELIVERY, ABORTED_READ, TORN),
    "spark-source": (LOST, DUP_DELIVERY, ABORTED_READ, TORN),
    "pipeline": (LOST, DUP_DELIVERY),
}
#: fault classes that concern each kind of configuration
FAULTS_OF = {
    "producer": (R.NO_FAULT, R.LOST_ACK, R.BROKER_CRASH, R.PRODUCER_CRASH, R.NETWORK_CUT),
    "consumer": (R.NO_FAULT, R.BROKER_CRASH, R.DRIVER_CRASH),
    "spark-source": (R.NO_FAULT, R.BROKER_CRASH, R.DRIVER_CRASH),
    "pipeline": (R.NO_FAULT, R.DRIVER_CRASH, R.EXECUTOR_LOSS, R.CHECKPOINT_LOSS),
}
#: outside any guarantee: an operator's act, not a fault the configuration answers for
OUTSIDE = (R.CHECKPOINT_LOSS,)
PRODUCER_MODES = ("transactional", "idempotent", "at-least-once", "at-most-once")

_BOOL_KEYS = {"enable.idempotence", "enable.auto.commit", "failOnDataLoss"}
_INT_KEYS = {"retries", "max.in.flight.requests.per.connection", "delivery.timeout.ms",
             "linger.ms", "request.timeout.ms", "transaction.timeout.ms"}


def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"3.0.12"`` -> (3, 0, 12); a suffix (``-rc1``, ``.post1``) is ignored."""
    return tuple(int(x) for x in re.findall(r"\d+", text or "")[:3]) or (0,)


def canonical(key: str, client: str | None = None) -> str:
    """The Java name the rules use for ``key`` as ``client`` reads it (None: any client's
    name): a librdkafka name is librdkafka's alone (advice_rules.CLIENT_ALIASES)."""
    return R.aliases(client).get(key, key)


def normalize(pairs: Iterable[tuple[str, Any]], client: str | None = None) -> dict[str, Any]:
    """Settings as the rules read them: Java names (``client``'s own names translated,
    None: any client's), typed values (acks "0"/"1"/"all", booleans, integers). A bad
    value is a ValueError naming the key."""
    out: dict[str, Any] = {}
    for raw_key, raw in pairs:
        key = canonical(raw_key, client)
        value: Any = raw
        try:
            if key == "acks":
                value = {"-1": "all", "all": "all", "0": "0", "1": "1"}[str(raw).lower()]
            elif key in _BOOL_KEYS and not isinstance(raw, bool):
                value = {"true": True, "false": False}[str(raw).strip().lower()]
            elif key in _INT_KEYS and not isinstance(raw, int):
                value = R.MAX_INT if str(raw) in ("inf", "infinity") else int(float(str(raw)))
            elif key == "isolation.level" or key == "kafka.isolation.level":
                key, value = "isolation.level", str(raw).lower()
            elif key == "transactional.id" and raw in ("", None):
                continue
        except (KeyError, ValueError):
            raise ValueError(f"{raw_key}={raw}: not a value the rules know") from None
        out[key] = value
    return out


@dataclass(frozen=True)
class Config:
    """A configuration to advise on: what the user wrote (normalized) and for which
    client at which version."""

    kind: str  # producer, consumer, spark-source, pipeline
    client: str  # java, kafka-python, librdkafka, spark
    version: str
    settings: Mapping[str, Any]
    name: str = ""


@dataclass
class Outcome:
    """One fault class: the kinds that can happen and every rule that says so or why not."""

    fault: str
    kinds: list[str]
    rules: list[R.Rule]
    scenario: str | None

    def to_json(self) -> dict:
        return {"fault": self.fault, "kinds": self.kinds, "scenario": self.scenario,
                "rules": [{"id": r.id, "kinds": list(r.kinds), "reason": r.reason,
                           "source": r.source, **({"known_bug": True} if r.bug else {})}
                          for r in self.rules]}


@dataclass
class Advice:
    config: Config
    effective: dict[str, Any]
    effects: list[R.Rule] = field(default_factory=list)
    refused: list[R.Rule] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    guarantee: str = ""
    #: the expectation-table column the guarantee is (None: none fits)
    mode: str | None = None

    def kinds(self, faults: Iterable[str]) -> set[str]:
        """Every kind that can happen under these fault classes (and with no fault)."""
        wanted = {R.NO_FAULT, *faults}
        return {k for o in self.outcomes if o.fault in wanted for k in o.kinds}

    def to_json(self) -> dict:
        c = self.config
        return {"name": c.name, "kind": c.kind, "client": c.client, "client_version": c.version,
                "settings": dict(c.settings), "effective": self.effective,
                "effects": [{"id": r.id, "reason": r.reason, "source": r.source, "sets": r.sets}
                            for r in self.effects],
                "refused": [{"id": r.id, "reason": r.reason, "source": r.source}
                            for r in self.refused],
                "guarantee": self.guarantee, "mode": self.mode,
                "faults": [o.to_json() for o in self.outcomes]}


def _value(eff: Mapping[str, Any], ref: Any) -> Any:
    if isinstance(ref, str) and "+" in ref:  # "linger.ms+request.timeout.ms"
        return sum(int(eff.get(k, 0) or 0) for k in ref.split("+"))
    return ref


def holds(cond: tuple, eff: Mapping[str, Any], explicit: Mapping[str, Any]) -> bool:
    """One ``(key, op, value)`` condition on the effective settings (``explicit``,
    ``unset``: on what the user wrote)."""
    key, op, ref = cond
    if op == "explicit":
        return key in explicit and (ref is None or explicit[key] == ref)
    if op == "any-set":
        return any(k in explicit for k in key.split("|"))
    have = eff.get(key)
    if op == "set":
        return have not in (None, "")
    if op == "unset":  # the user did not write it (a default may still fill it)
        return key not in explicit
    if have is None:
        return False
    ref = _value(eff, ref)
    if op == "==":
        return have == ref
    if op == "!=":
        return have != ref
    if op == "in":
        return have in ref
    if op == ">":
        return have > ref
    if op == "<":
        return have < ref
    raise ValueError(f"unknown condition operator {op!r}")


def applies(rule: R.Rule, cfg: Config) -> bool:
    """The rule is for this client at this version."""
    if cfg.client not in rule.clients:
        return False
    v = version_tuple(cfg.version)
    if rule.since and v < version_tuple(rule.since):
        return False
    return not (rule.until and v >= version_tuple(rule.until))


def effective(cfg: Config) -> tuple[dict[str, Any], list[R.Rule]]:
    """The client's defaults filled in, then what the client changes itself."""
    eff: dict[str, Any] = {"kind": cfg.kind}
    for rule in R.RULES:
        if rule.stage == R.DEFAULT and applies(rule, cfg) and \
                all(holds(c, eff, cfg.settings) for c in rule.when):
            for k, v in rule.sets.items():
                eff.setdefault(k, v)
    eff.update(cfg.settings)
    effects = []
    for rule in R.RULES:
        if rule.stage == R.EFFECT and applies(rule, cfg) and \
                all(holds(c, eff, cfg.settings) for c in rule.when):
            eff.update(rule.sets)
            effects.append(rule)
    return eff, effects


def advise(cfg: Config) -> Advice:
    """The effective configuration, what the client refuses, what each fault class can
    do, and the guarantee: the strongest column of the expectation table that every
    predicted kind (outside known bugs and checkpoint loss) is allowed in."""
    eff, effects = effective(cfg)
    shown = {k: v for k, v in eff.items() if k != "kind"}
    advice = Advice(cfg, shown, effects)

    def match(rule: R.Rule) -> bool:
        return applies(rule, cfg) and all(holds(c, eff, cfg.settings) for c in rule.when)

    advice.refused = [r for r in R.RULES if r.stage == R.REFUSED and match(r)]
    for fault in FAULTS_OF[cfg.kind]:
        rules = [r for r in R.RULES if r.stage == fault and match(r)]
        kinds = sorted({k for r in rules for k in r.kinds if k in KINDS_OF[cfg.kind]})
        advice.outcomes.append(Outcome(fault, kinds, rules, R.SCENARIO.get(fault)))
    held = {k for o in advice.outcomes if o.fault not in OUTSIDE for r in o.rules
            if not r.bug for k in r.kinds}
    advice.mode, advice.guarantee = _guarantee(cfg.kind, eff, held, bool(advice.refused))
    return advice


def _guarantee(kind: str, eff: Mapping[str, Any], kinds: set[str],
               refused: bool) -> tuple[str | None, str]:
    iso = eff.get("isolation.level", READ_COMMITTED)
    if refused:
        return None, "none: the client refuses this configuration"
    if kind == "pipeline":
        for g in ("exactly-once", "at-least-once"):
            if all(expectation(f"pipeline/{g}", READ_COMMITTED, k) != FORBIDDEN for k in kinds):
                return f"pipeline/{g}", f"{g} from input to output"
        return None, "none: records can be lost"
    if kind in ("consumer", "spark-source"):
        parts = ["reads committed transactions only" if iso == READ_COMMITTED else
                 "reads aborted and open transactions' records too (read_uncommitted)"]
        if LOST in kinds:
            parts.append("can skip records")
        if DUP_DELIVERY in kinds:
            parts.append("can deliver records twice")
        return column_name("transactional", "transactional", iso), "; ".join(parts)
    for mode in PRODUCER_MODES:
        if mode == "transactional" and not eff.get("transactional.id"):
            continue
        if all(expectation(mode, iso, k) != FORBIDDEN for k in kinds):
            return mode, mode + ("" if mode != "transactional" or iso == READ_COMMITTED
                                 else " (read at read_uncommitted: aborted records visible)")
    return None, "none: records can be lost and duplicated"


# ---- a run's verdicts against the advice ------------------------------------------------

def fault_classes(faults: Iterable[Mapping]) -> set[str]:
    """The fault classes of a scenario's fault specs (``kind``, ``target``)."""
    out = set()
    for f in faults:
        kind = f.get("kind")
        if kind == "process-kill":
            proc = str((f.get("target") or {}).get("process", ""))
            out.add(R.PRODUCER_CRASH if proc.startswith("producer") else R.DRIVER_CRASH)
        elif kind in R.FAULT_OF_KIND:
            out.add(R.FAULT_OF_KIND[kind])
    return out


def compare(advice: Advice, column: Mapping, faults: set[str]) -> dict:
    """One report column (its ``anomalies`` counts) against the advice under the run's
    fault classes: every kind observed that the advice says cannot happen is a
    disagreement (the advisor or the client is wrong); predicted kinds that showed are
    ``demonstrated``."""
    allowed = advice.kinds(faults)
    relevant = KINDS_OF[advice.config.kind]
    seen = {k: a.get("count", 0) for k, a in (column.get("anomalies") or {}).items()
            if k in relevant and a.get("count", 0) > 0}
    return {"column": column.get("name"), "config": advice.config.name,
            "verdict": column.get("verdict"), "faults": sorted(faults),
            "predicted": sorted(allowed),
            "demonstrated": sorted(k for k in seen if k in allowed),
            "disagree": sorted(k for k in seen if k not in allowed),
            "counts": seen, "agree": all(k in allowed for k in seen)}
