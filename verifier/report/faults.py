"""The fault summary: one line per scheduled fault, from the nemesis history, with the
evidence that it fired (the proxy's hits, a killed producer's epoch bump)."""

from __future__ import annotations

from pathlib import Path

from verifier.judge.faults.owners import long_text, per_instance
from verifier.rundata.formats import RunFormatError
from verifier.rundata.history import HistoryError, history_path, read_history
from verifier.rundata.layout import RunLayout
from verifier.rundata.nemesis import read_nemesis
from verifier.rundata.plan import plan_of


def fault_summary(run_dir: Path) -> list[str]:
    """One line per scheduled fault from the nemesis history: did it fire, what it did.
    A killed producer's line also shows its broker identity before and after the restart
    (the ``producer-id`` lines of its history): a transactional restart bumps the epoch of
    the same producer id, which fences the killed session."""
    try:
        ops = read_nemesis(RunLayout(run_dir).nemesis)
    except RunFormatError:
        return []  # the run's own checks report a missing or damaged nemesis history
    starts: dict[int, dict] = {}
    heals: dict[int, dict] = {}
    holds: dict[int, list[dict]] = {}
    for ev in ops:
        if ev.get("type") in ("ok", "fail", "info") and ev.get("id"):
            (starts if ev.get("f") == "start" else heals)[ev["id"]] = ev
        elif ev.get("type") == "event" and ev.get("id"):
            holds.setdefault(ev["id"], []).append(ev)
    idents = producer_identities(Path(run_dir))
    lines = []
    for fid, ev in sorted(starts.items()):
        what = "fired" if ev["type"] == "ok" else f"did not fire ({ev['type']}: " \
            f"{ev.get('error') or ev.get('detail')})"
        detail = ev.get("detail") or {}
        target = detail.get("node") or detail.get("process") or ev.get("target")
        heal = (heals.get(fid) or {}).get("detail") or {}
        if ev["fault"] == "hold":
            extra = hold_text(holds.get(fid, []))
        elif "hits" in heal:
            extra = f", {heal['hits']} of {heal['matched']} responses hit"
        else:
            extra = ""
        if ev["type"] == "ok" and detail.get("trigger"):
            extra = trigger_text(detail) + extra
        if ev["type"] != "fail":
            extra += coordinator_text(detail)
        if ev["type"] == "ok" and isinstance(target, str) and target in idents:
            extra += f"; {idents[target]}"
        if ev["type"] == "ok":
            extra += instances_text(detail, heal)
        lines.append(f"{ev['fault']} on {target_text(target)}: {what}{extra}")
    return lines


def trigger_text(detail: dict) -> str:
    """What a triggered start waited for and found (verifier.harness.faults.triggers):
    " mid-batch (batch 4, 310 offsets) after 12.5 s"."""
    name, found = detail["trigger"], []
    if name == "mid-batch":
        if detail.get("batch") is not None:
            found.append(f"batch {detail['batch']}")
        if detail.get("batch_offsets") is not None:
            found.append(f"{detail['batch_offsets']} offsets")
    elif name in ("in-transaction", "copy-committed"):
        if name == "copy-committed":
            found.append(f"after transaction {detail.get('committed_txn')} committed "
                         "since the copy's answer")
        name = f"inside transaction {detail.get('txn')}"
        found.append(f"{detail.get('txn_sends')} sent, {detail.get('txn_acked')} acked")
        if detail.get("txn_ending"):
            found.append(f"its {detail['txn_ending']} unanswered")
    elif name == "every-column":
        name = "with batches of every column in flight"
        found += [f"{iso} batch {b}" for iso, b in sorted((detail.get("batches") or {}).items())]
    elif name in ("appended", "held", "forged"):
        name = "at its first " + {"appended": "dropped answer to an append",
                                  "held": "held request", "forged": "forged error answer"}[name]
    return f" {name}" + (f" ({', '.join(found)})" if found else "") + \
        f" after {detail.get('waited_s')} s"


def instances_text(detail: dict, heal: dict) -> str:
    """What each application instance owned during the fault and the rebalances it saw
    (verifier.judge.faults.owners), and an instance acted on at the planned time for want
    of a state file: "; a/0 owned t-0,t-1 -> t-0, 1 rebalance(s)"."""
    text = ""
    for k in [*(detail.get("killed") or ()), *(detail.get("paused") or ())]:
        if isinstance(k, dict) and k.get("fallback"):
            text += f"; {k.get('process')}: {k['fallback']}"
    for app, entries in per_instance(detail, heal).items():
        text += f"; {long_text(app, entries)}"
    return text


def coordinator_text(detail: dict) -> str:
    """Whether a broker fault's target was the transaction coordinator of one of the
    run's transactional ids (start detail ``coordinators``, ``coordinator_of``) and, for a
    leader that avoids them, which partition's leader was taken: "; partition 1's leader,
    chosen to avoid the transaction coordinators; not a transaction coordinator (r.tx-0
    on broker 1)". Empty for a run without transactional ids or another fault."""
    coords = detail.get("coordinators")
    if not coords:
        return ""
    text = ""
    if detail.get("avoided") is True:
        text = (f"; partition {detail.get('partition')}'s leader, chosen to avoid the "
                "transaction coordinators")
    elif detail.get("avoided") is False:
        text = f"; could not avoid the transaction coordinators: {detail.get('why')}"
    mine = detail.get("coordinator_of") or []
    if mine:
        return text + f"; the transaction coordinator of {', '.join(mine)}"
    where = ", ".join(f"{t} on " + ("an unknown broker" if c.get("node") is None
                                    else f"broker {c['node']}")
                      for t, c in sorted(coords.items()))
    return text + f"; not a transaction coordinator ({where})"


def hold_text(events: list[dict]) -> str:
    """What a hold fault did: each held request, what released it, the broker's answer."""
    by_hold: dict[int, dict[str, dict]] = {}
    for ev in events:
        by_hold.setdefault(ev["detail"].get("hold"), {})[ev["f"]] = ev["detail"]
    if not by_hold:
        return ", no request matched"
    parts = []
    for h in by_hold.values():
        req = (h.get("hold") or h.get("release") or {}).get("request", {})
        what = req.get("api", "?")
        if req.get("partitions"):
            what += " " + ",".join(_partition_text(p) for p in req["partitions"])
        gated = (h.get("hold") or {}).get("client_view") == "delay"
        text = f"then held back {what}" if gated else f"held {what}"
        if "release" in h:
            reason = str(h["release"].get("reason"))
            why = reason if reason.startswith("after") or reason == "rule removed" \
                else f"by {reason}"
            text += f", released {why} (held {h['release'].get('held_ms')} ms)"
        else:
            text += ", never released"
        answer = (h.get("answer") or {}).get("response") or {}
        if "partitions" in answer:
            text += "; broker answered " + ", ".join(
                f"error {e} offset {o}" for _, _, e, o in answer["partitions"])
        elif "error_code" in answer:
            text += f"; broker answered error {answer['error_code']}"
        parts.append(text)
    return ": " + "; ".join(parts)


def _partition_text(p: dict) -> str:
    seq = p.get("base_sequence")
    return f"{p.get('topic')}-{p.get('partition')}" + ("" if seq is None else f" seq {seq}")


def target_text(target) -> str:
    """A fault's target as a reader says it: "every broker", "broker 2", "the coordinator
    of transactional id X", or the process it names."""
    if not isinstance(target, dict):
        return f"broker {target}" if isinstance(target, int) else str(target)
    if target.get("all"):
        return "every broker"
    if "node" in target:
        return f"broker {target['node']}"
    for role in ("leader", "coordinator"):
        if role in target:
            of = target[role]
            what = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in of.items()) \
                if isinstance(of, dict) else str(of)
            return f"the {role} of {what}"
    return ", ".join(f"{k} {v}" for k, v in target.items())


def producer_identities(run_dir: Path) -> dict[str, str]:
    """Process name -> "producer id P epoch E (session 1) -> ..." for each generator whose
    history records a broker-assigned identity in more than one session."""
    plan = plan_of(run_dir)
    if plan is None:
        return {}
    out = {}
    for pid, producer in plan.producers.items():
        try:
            events = read_history(history_path(run_dir, pid)).events
        except HistoryError:
            continue  # never started, or damaged: the checks say so
        seen = [(e.get("ses"), e.get("producer_id"), e.get("epoch")) for e in events
                if e.get("type") == "producer-id"]
        if len({s for s, _, _ in seen}) > 1:
            out[f"producer:{producer.mode}"] = " -> ".join(
                f"producer id {p} epoch {e} (session {s})" for s, p, e in seen)
    return out
