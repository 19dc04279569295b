"""A known-bug row's own evidence (issue 45): does a run's verdict come from the request
the schedule forced?

A known bug's schedule forces one protocol event: a late request (a Produce held until its
transaction ended) or a replayed copy (an EndTxn, a coordinator's WriteTxnMarkers, a
TxnOffsetCommit, whose original went on) released into the window the bug needs. A run
*shows* the bug only when a forbidden anomaly of the bug's column is tied to that forced
request, and is *clean* only when the forced request reached the broker inside its window
and the broker refused it (the fix at work). Anything else says nothing about the bug.

The ties (pure functions of the nemesis history, the verdict's anomaly samples and the
producers' histories):

- a late **Produce** accepted at offset ``o`` with ``n`` records: the anomalies at
  offsets ``o .. o+n-1`` of that partition, or with the identity of one of those records
  (the late batch's records: its transaction's records to that partition, one batch per
  partition; a duplicate names its other copy's offset);
- a copy of an **EndTxn** or a **WriteTxnMarkers** that the broker took: the anomalies of
  the transaction of the same producer that was open when the broker answered the copy
  (the transaction the stale request ended), on the marker's partitions for a marker;
- a copy of a **TxnOffsetCommit**: the lost input records the copier's transaction that
  sent the original had planned (its offsets, committed late, skip them).

A request is *in its window* when an event released it (a protocol event, or the marker
it waited for), not its time bound or the end of the fault: a copy released at its bound
is counted as what it is, stale, and proves nothing about the window.
"""

from __future__ import annotations

from pathlib import Path

from verifier.report.kill_evidence import (
    attach_restarts,
    kill_text,
    killed_in_transaction,
    restart_text,
)
from verifier.report.versions import _client_key, _error_name
from verifier.rundata.formats import RunFormatError, read_jsonl
from verifier.rundata.layout import RunLayout
from verifier.rundata.nemesis import read_nemesis

#: the hold's client views that force a request (``delay``: then_hold's gate, not forced)
FORCING_VIEWS = ("copy", "timeout", "reset", "drop")
#: a release reason that is not the window's event
_NOT_AN_EVENT = ("no partition or producer to watch",)


def forced_requests(ops: list[dict], client_key: str | None = None) -> list[dict]:
    """Each request a hold forced, from the nemesis history ``ops``: its hold number,
    request, whether it is a copy, how it was released (``released``: the reason,
    ``in_window``: by the event it waited for), the broker's answer (``answer``: the
    response summary, ``answered_t``) and its error codes. ``client_key``: only the
    requests of that client's transactional id (``""`` or None: every one)."""
    out: dict[int, dict] = {}
    for op in ops:
        if op.get("type") != "event" or op.get("fault") not in (None, "hold"):
            continue
        d = op.get("detail") or {}
        n = d.get("hold")
        if op.get("f") == "hold" and d.get("client_view") in FORCING_VIEWS:
            request = d.get("request") or {}
            if client_key and _client_key(str(request.get("transactional_id") or "")) != \
                    client_key:
                continue
            out[n] = {"hold": n, "request": request, "copy": d["client_view"] == "copy",
                      "held_t": op.get("t"), "released": None, "in_window": False,
                      "trigger": None, "answer": None, "answered_t": None, "errors": []}
        elif n in out and op.get("f") == "release":
            trigger = d.get("trigger")
            reason = str(d.get("reason") or "")
            out[n].update(released=reason, trigger=trigger,
                          in_window=bool(trigger) and bool(d.get("delivered", True))
                          and reason not in _NOT_AN_EVENT)
        elif n in out and op.get("f") == "answer" and not d.get("gated"):
            response = d.get("response") or {}
            out[n].update(answer=response, answered_t=op.get("t"),
                          errors=answer_errors(response))
    return list(out.values())


def forged_answers(ops: list[dict], client_key: str | None = None) -> list[dict]:
    """The answers an ``error-answer`` fault forged to each generator (its heal detail's
    ``clients``: [matched, forged] per client id), as forced requests: the proxy refused
    (or replaced) them in the broker's place, so they are in their window by
    construction; ``client_key``: only the generator of that client's column."""
    out, rules = [], {}
    for op in ops:
        if op.get("type") != "ok" or op.get("fault") != "error-answer":
            continue
        d = op.get("detail") or {}
        if op.get("f") == "start":  # the rule as set: its error and variant
            rules[op.get("id")] = d.get("rule") or {}
        if op.get("f") != "heal":
            continue
        rule = rules.get(op.get("id"), {})
        for cid, counts in (d.get("clients") or {}).items():
            forged = int(counts[1]) if isinstance(counts, list | tuple) else 0
            if not forged or (client_key and not cid.endswith(f"-{client_key}-0")):
                continue
            code = int(rule.get("error_code") or 0)
            out.append({"hold": None, "request": {"api": "Produce" if rule.get(
                "api_keys", [0]) == [0] else "request", "client_id": cid},
                        "copy": False, "forged": forged, "held_t": op.get("t"),
                        "released": f"{rule.get('variant') or 'refuse'}d by the proxy",
                        "in_window": True, "trigger": "error-answer",
                        "answer": {"error_code": code}, "answered_t": op.get("t"),
                        "errors": [code]})
    return out


def answer_errors(response: dict) -> list[int]:
    """The error codes of a response summary: a Produce's per partition, a
    WriteTxnMarkers' per marker, else its one code."""
    if "partitions" in response:
        return [int(p[2]) for p in response["partitions"]]
    if "markers" in response:
        return [int(m[2]) for m in response["markers"]]
    return [int(response["error_code"])] if "error_code" in response else []


def answer_text(forced: dict) -> str:
    """``accepted`` or ``refused: InvalidProducerEpoch`` (the first refusal), or
    ``not answered``."""
    if forced.get("killed"):
        return restart_text(forced)
    if forced["answer"] is None:
        return "not answered"
    refusals = [e for e in forced["errors"] if e]
    return f"refused: {_error_name(refusals[0])}" if refusals else "accepted"


def transactions(history: list[dict]) -> list[dict]:
    """A producer history's transactions, each attempt apart (an aborted transaction
    redone keeps its number): ``ses``, ``txn``, ``begin`` and ``end`` times (None while
    open at the end of the run), ``recs`` (the planned ``[partition, seq]``)."""
    out: list[dict] = []
    last: dict[tuple, dict] = {}
    for line in history:
        f, txn = line.get("f"), line.get("txn")
        if txn is None:
            continue
        key = (line.get("ses"), txn)
        if line.get("type") == "invoke" and f == "begin":
            last[key] = {"ses": key[0], "txn": txn, "begin": line.get("t"), "end": None,
                         "recs": [tuple(r) for r in line.get("recs") or []]}
            out.append(last[key])
        elif f in ("commit", "abort") and line.get("type") in ("ok", "fail", "info") \
                and key in last:
            last[key]["end"] = line.get("t")
    return out


def open_at(txns: list[dict], t: int | None) -> dict | None:
    """The transaction open at time ``t`` (begun at or before it, not ended before it)."""
    if t is None:
        return None
    found = [x for x in txns if x["begin"] is not None and x["begin"] <= t
             and (x["end"] is None or t <= x["end"])]
    return max(found, key=lambda x: x["begin"]) if found else None


def _offsets(anomaly: dict) -> list[int]:
    return [int(o) for o in anomaly.get("offsets") or [anomaly.get("offset")] if o is not None]


def tie(forced: dict, anomalies: list[dict], pid: str, txns: list[dict]) -> tuple[list, str]:
    """The anomalies tied to one forced request, and how (see the module's text)."""
    request, api = forced["request"], forced["request"].get("api")
    if forced.get("forged"):
        # the records the application committed after flush() while their send was in
        # flight (KAFKA-19479): its history's ok lines with "in_flight"
        committed = {(p, q) for p, q in txns if p is not None}
        tied = [a for a in anomalies if a.get("pid") == pid
                and (a.get("partition"), a.get("seq")) in committed]
        return tied, (f"{len(committed)} records {pid} committed after flush() while their "
                      "send was in flight")
    if api == "Produce":
        sizes = {p.get("partition"): int(p.get("records") or 1)
                 for p in request.get("partitions") or []}
        spans = [(p, off, off + sizes.get(p, 1) - 1) for _, p, err, off in
                 (forced["answer"] or {}).get("partitions") or [] if err == 0 and off >= 0]
        # its records by identity too: a duplicate names the other copy's offset
        txn = open_at(txns, forced["held_t"]) if spans else None
        ids = {(p, q) for p, q in txn["recs"] if p in sizes} if txn else set()
        tied = [a for a in anomalies
                if any(a.get("partition") == p and any(lo <= o <= hi for o in _offsets(a))
                       for p, lo, hi in spans)
                or (a.get("pid") == pid and (a.get("partition"), a.get("seq")) in ids)]
        how = ", ".join(f"the late batch's records at {p}@{lo}-{hi}" for p, lo, hi in spans)
        if txn:
            how += f" (transaction {txn['txn']} of {pid}, whose records they are)"
        return tied, how or "the late batch was not written"
    if api == "TxnOffsetCommit":
        txn = open_at(txns, forced["held_t"])
        if txn is None:
            return [], "no transaction of the copier open when the original went"
        planned = set(txn["recs"])
        tied = [a for a in anomalies if (a.get("partition"), a.get("offset")) in planned]
        return tied, (f"input of the copier's transaction {txn['txn']} (session {txn['ses']}),"
                      " whose offsets the copy carried")
    if api in ("EndTxn", "WriteTxnMarkers"):
        if forced["answer"] is None or any(forced["errors"]):
            return [], f"the broker did not take the {api} ({answer_text(forced)})"
        txn = open_at(txns, forced["answered_t"])
        if txn is None:
            return [], f"no transaction of {pid} open when the {api} was answered"
        parts = {p.get("partition") for p in request.get("partitions") or []}
        tied = [a for a in anomalies if a.get("pid") == pid and a.get("ses") == txn["ses"]
                and a.get("txn") == txn["txn"]
                and (api == "EndTxn" or a.get("partition") in parts)]
        where = "" if api == "EndTxn" else f" on partition {sorted(parts)}"
        return tied, f"transaction {txn['txn']} of {pid}{where}, open when the {api} was answered"
    return [], f"no tie known for a forced {api}"


def forced_text(forced: dict) -> str:
    """``copy of EndTxn (producer 0, epoch 3) released by Produce response: accepted``."""
    r = forced["request"]
    if forced.get("killed"):
        return kill_text(forced)
    if forced.get("forged"):
        name = _error_name(forced["errors"][0]) if forced["errors"] else "its error"
        return (f"{forced['forged']} {r.get('api', '?')} {forced['released']} with {name} "
                f"(to {r.get('client_id')}); the application was told of "
                f"{forced.get('reported', '?')} failed sends before their commit")
    what = f"{'copy of ' if forced['copy'] else 'late '}{r.get('api', '?')}"
    who = f" (producer {r.get('producer_id')}, epoch {r.get('producer_epoch')})" \
        if r.get("producer_id") is not None else ""
    how = f"released by {forced['released']}" if forced["in_window"] else \
        f"released at its bound ({forced['released']}), not into the event" \
        if forced["released"] else "never released"
    return f"{what}{who} {how}: {answer_text(forced)}"


def run_evidence(status: str, outcome: str, forced: list[dict], anomalies: list[dict],
                 pid_of, txns_of, in_flight_of=None, failed_of=None) -> dict:
    """One run's evidence for a row: ``shows`` (the run shows the bug: a forbidden
    anomaly tied to a forced request in its window), ``clean`` (the forced request went
    into its window and the broker refused it), the forced requests, the tied anomalies,
    and ``open``: why the run says nothing about the bug (None when it does).
    ``pid_of(transactional id)`` names a producer's history, ``txns_of(pid)`` its
    transactions; ``anomalies``: the forbidden anomalies of the row's columns. For forged
    error answers (:func:`forged_answers`): ``in_flight_of(pid)`` the records a generator
    committed after flush() while in flight, ``failed_of(pid)`` how many sends it was told
    failed with the forged error (the refusal reached the application before its commit:
    without one, a PASS is not clean)."""
    in_window = [f for f in forced if f["in_window"]]
    tied: list[dict] = []
    hows: list[str] = []
    for f in in_window:
        if f.get("killed"):  # the kill is the scenario's fault: its columns' anomalies,
            hows.append(kill_text(f))  # when the restart kept its store at a checkpoint
            if not (f.get("restart") or {}).get("kept"):
                continue
            _add_tied(tied, anomalies, None, kill_text(f))
            continue
        if f.get("forged"):
            pid = str(f["request"].get("client_id") or "").removeprefix("verifier.generator.")
            these, how = tie(f, anomalies, pid, (in_flight_of or (lambda _: []))(pid))
            reported = (failed_of or (lambda _: 0))(pid)
            f["reported"] = reported
            if not reported and not these:
                f["errors"] = []  # no refusal reached the application: not clean
            hows.append(how)
            _add_tied(tied, these, None, how)
            continue
        pid = pid_of(str(f["request"].get("transactional_id") or ""))
        these, how = tie(f, anomalies, pid, txns_of(pid) if pid else [])
        hows.append(how)
        _add_tied(tied, these, f["hold"], how)
    refused = [f for f in in_window if f["answer"] is not None and any(f["errors"])
               or (f.get("restart") or {}).get("wiped")]
    ev = {"forced": [{"hold": f["hold"], "api": f["request"].get("api"), "copy": f["copy"],
                      "forged": f.get("forged"), "killed": f.get("killed"),
                      "producer_id": f["request"].get("producer_id"),
                      "producer_epoch": f["request"].get("producer_epoch"),
                      "released": f["released"], "in_window": f["in_window"],
                      "answer": answer_text(f), "error_codes": f["errors"],
                      "text": forced_text(f)} for f in forced],
          "anomalies": tied, "shows": bool(tied), "clean": bool(refused) and not tied,
          "in_window": bool(in_window), "open": None}
    if not forced:
        ev["open"] = "no request was forced (nothing held for this client)"
    elif not in_window:
        ev["open"] = "; ".join(forced_text(f) for f in forced)
    elif outcome == "FAIL" and status == "affected" and not tied:
        ev["open"] = ("FAIL, but no forbidden anomaly is tied to the forced request ("
                      + "; ".join(dict.fromkeys(hows)) + ")")
    elif outcome == "PASS" and status != "affected" and not refused:
        ev["open"] = ("PASS, but the broker refused no forced request in its window ("
                      + "; ".join(forced_text(f) for f in in_window) + ")")
    return ev


def forced_by(evidence: list[dict]) -> str:
    """How a row's runs forced the bug: ``copy`` (a replayed copy of a request, which the
    client never sent twice), ``own`` (the client's own request, held), ``answer`` (an
    error answer the proxy forged), ``kill`` (an application instance killed inside a
    transaction), several of them, or ``-``."""
    kinds = {"kill" if f.get("killed") else "answer" if f.get("forged") else
             "copy" if f["copy"] else "own" for ev in evidence for f in ev.get("forced") or []}
    return "+".join(k for k in ("copy", "own", "answer", "kill") if k in kinds) or "-"


def _add_tied(tied: list[dict], these: list[dict], hold, how: str) -> None:
    """Add ``these`` anomalies to ``tied`` (short, with the forced request that ties them
    and how), each once."""
    def key(a):
        return (a.get("kind"), a.get("partition"), a.get("offset"), a.get("pid"), a.get("seq"))
    seen = {key(a) for a in tied}
    tied += [{**_short(a), "hold": hold, "by": how} for a in these if key(a) not in seen]


def _short(a: dict) -> dict:
    return {k: a.get(k) for k in ("kind", "topic", "partition", "offset", "pid", "ses", "seq",
                                  "txn")}


def evidence_text(ev: dict) -> str:
    """One run's evidence in a few words, for the grid."""
    if ev.get("open"):
        return f"open: {ev['open']}"
    window = [f for f in ev["forced"] if f["in_window"]]
    head = "; ".join(f["text"] for f in window[:2]) + (f" (+{len(window) - 2})"
                                                        if len(window) > 2 else "")
    if ev["anomalies"]:
        kinds = "/".join(sorted({a["kind"] for a in ev["anomalies"]}))
        return f"{head}; tied: {len(ev['anomalies'])} {kinds} ({ev['anomalies'][0]['by']})"
    return head


def load_run_evidence(run_dir, status: str, outcome: str, client_key: str,
                      anomalies: list[dict], run: str = "") -> dict:
    """:func:`run_evidence` from a run's folder (its nemesis history and producers'
    histories); ``run``: the run id, the prefix of its transactional ids."""
    if not run_dir:
        return {"forced": [], "anomalies": [], "shows": False, "clean": False,
                "in_window": False, "open": "no run folder"}
    layout = RunLayout(Path(run_dir))
    try:
        ops = read_nemesis(layout.nemesis)
    except RunFormatError as exc:
        return {"forced": [], "anomalies": [], "shows": False, "clean": False,
                "in_window": False, "open": f"no nemesis history: {exc}"}

    def pid_of(tid: str) -> str:
        return tid[len(run) + 1:] if run and tid.startswith(run + ".") else \
            tid.rpartition(".")[2]

    def txns_of(pid: str) -> list[dict]:
        try:
            _, lines = read_jsonl(layout.history(pid), "producer-history")
        except (RunFormatError, OSError):
            return []
        return transactions(lines)

    def lines_of(pid: str) -> list[dict]:
        try:
            return read_jsonl(layout.history(pid), "producer-history")[1]
        except (RunFormatError, OSError):
            return []

    def in_flight_of(pid: str) -> list[tuple]:
        return [(x.get("p"), x.get("seq")) for x in lines_of(pid)
                if x.get("type") == "ok" and x.get("in_flight")]

    def failed_of(pid: str) -> int:
        return sum(1 for x in lines_of(pid) if x.get("type") in ("fail", "info")
                   and x.get("f") == "send" and "TooLarge" in str(x.get("error") or ""))

    kills = killed_in_transaction(ops)
    attach_restarts(kills, layout.logs)
    forced = forced_requests(ops, client_key) + forged_answers(ops, client_key) + kills
    return run_evidence(status, outcome, forced, anomalies, pid_of, txns_of,
                        in_flight_of, failed_of)
