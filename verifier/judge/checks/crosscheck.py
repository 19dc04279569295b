"""The live checks against the batch checks, on the same run: any difference is a bug.

The observer's live checks (verifier.judge.definitions.stream) and the batch pass apply
the same definitions; on a finished run both must name the same anomalies of the kinds
the live path decides, for the reader the live path ran in (the Spark observer). The
comparison is on :func:`~verifier.judge.definitions.stream_rest.same_anomaly_key` with
multiplicity. The live checks judge aborted reads by the records' abort intent; those
of a transaction that died open or failed its commit need its history, which the live
path's remainder reads after the drain: compared with the stream alone, the batch's
aborted reads are those meant to abort; compared with the whole live result, all of them.

A difference turns the columns it concerns UNKNOWN (never hidden), with the differing
rows in ``verdict.json`` ``live_vs_batch``.
"""

from __future__ import annotations

from collections import Counter

import orjson
import pyarrow as pa
from pyspark.sql import functions as F

from verifier.judge import verdict as V
from verifier.judge.checks import history as H
from verifier.judge.checks import log, txn
from verifier.judge.checks.derive import Derived
from verifier.judge.definitions.stream import LIVE_KINDS, LiveChecks
from verifier.judge.definitions.stream_rest import missing, same_anomaly_key
from verifier.judge.model import (
    ABORTED_READ,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    ISOLATIONS,
    LOST,
    OBSERVER,
    TORN,
    UNSEEN,
    RunData,
)  # fmt: skip

KEY_FIELDS = ("kind", "isolation", "topic", "partition", "pid", "seq", "offset")
#: the kinds the live path decides after the drain from its states, the followed
#: histories and drain.json, besides lost and unseen (verifier.assess.follow)
REST_KINDS = (TORN, HANGING, INCONSISTENT)


def batch_rows(d: Derived, remainder: bool = False, rest: bool = False) -> list[dict]:
    """The batch checks' anomalies of the live kinds (and lost/unseen with
    ``remainder``; torn, hanging and inconsistent offsets, and the aborted reads not meant
    to abort, with ``rest``), as the observer read them: an inconsistent offset where its
    two levels got different records (the evidence's ``seen``), every hanging partition."""
    extra = [LOST, UNSEEN] if remainder else []
    extra += list(REST_KINDS) if rest else []
    rows = d.anomalies(*[k for k in LIVE_KINDS if k != FOREIGN], *extra).unionByName(
        log.check_foreign(d))
    if rest:
        rows = rows.unionByName(txn.check_torn(d)).unionByName(txn.check_hanging(d))
    mine = F.array_contains(F.split(F.coalesce(F.col("reader"), F.lit("")), ","), OBSERVER)
    mine = mine | F.col("kind").isin(HANGING, INCONSISTENT)
    meant = F.coalesce(F.get_json_object("evidence", "$.abort_intent") == "true", F.lit(False))
    rows = rows.where(mine & ((F.col("kind") != ABORTED_READ) | meant | F.lit(rest)))
    out = [r.asDict() for r in rows.select(*KEY_FIELDS, "ses", "txn", "evidence").collect()]
    return [{k: v for k, v in r.items() if k != "evidence"} for r in out
            if r["kind"] != INCONSISTENT or _levels_differ(r["evidence"])]


def _levels_differ(evidence: str | None) -> bool:
    """An inconsistent offset whose two observer levels were both there and differ (one
    found only against the plain reader is not the live path's)."""
    seen = (orjson.loads(evidence) if evidence else {}).get("seen") or {}
    a, b = (seen.get(f"{OBSERVER}/{iso}") for iso in ISOLATIONS)
    return a is not None and b is not None and a != b


def remainder(run: RunData, d: Derived, states: dict[str, LiveChecks]) -> list[dict]:
    """lost / unseen for the observer from its final live states and the histories
    (:func:`verifier.judge.definitions.stream_rest.missing`), no pass over the observations."""
    topics = {pid: p.topic for pid, p in run.config.producers.items()}
    sends = H.sends(d.attempts, d.status, topics)
    out = []
    for iso, live in states.items():
        out += missing(live, sends,
                       lambda t, p, iso=iso: run.drain.incomplete(t, p, OBSERVER, iso))
    return out


def compare(run: RunData, d: Derived, live: pa.Table | list[dict], cap: int = 20,
            states: dict[str, LiveChecks] | None = None, full: bool = False) -> dict:
    """``verdict.json`` ``live_vs_batch``: counts of both sides and the rows only one
    side has (first ``cap``, each with its side and the column's mode). With the final
    live ``states`` per isolation level, lost and unseen are compared too; with ``full``
    ``live`` is the whole live result (verifier.assess.follow: lost and unseen,
    torn, hanging and inconsistent offsets included) and every kind of it is compared."""
    if isinstance(live, pa.Table):
        live = live.select([*KEY_FIELDS, "ses", "txn"]).to_pylist()
    rows = [{k: r.get(k) for k in (*KEY_FIELDS, "ses", "txn")} for r in live]
    if states is not None and not full:
        rows += remainder(run, d, states)
    ours = Counter(same_anomaly_key(r) for r in rows)
    theirs = Counter(same_anomaly_key(r)
                     for r in batch_rows(d, states is not None or full, full))
    only_live, only_batch = ours - theirs, theirs - ours
    modes = {pid: p.mode for pid, p in run.config.producers.items()}
    by_topic = {p.topic: p.mode for p in run.config.producers.values()}
    differ = []
    for side, diff in (("live only", only_live), ("batch only", only_batch)):
        for key, n in sorted(diff.items(), key=lambda kv: tuple(map(str, kv[0]))):
            kind, iso, topic, part, pid, seq, off = key
            row = {"side": side, "kind": kind, "isolation": iso, "topic": topic,
                   "partition": part, "pid": pid, "seq": seq, "offset": off,
                   "times": n, "mode": modes.get(pid) or by_topic.get(topic)}
            if kind == TORN:  # its key holds the transaction and its session
                row.update(seq=None, offset=None, txn=seq, ses=off)
            differ.append(row)
    kinds = [*LIVE_KINDS, LOST, UNSEEN] if states is not None or full else list(LIVE_KINDS)
    kinds += list(REST_KINDS) if full else []
    return {"compared": True, "kinds": kinds, "reader": OBSERVER,
            "live": sum(ours.values()), "batch": sum(theirs.values()),
            "agree": not differ, "n_differ": len(differ),
            "modes": sorted({x["mode"] or "(unattributed)" for x in differ}),
            "where": sorted({(x["mode"] or "(unattributed)", x["isolation"]) for x in differ}),
            "differ": differ[:cap]}  # fmt: skip


def mark_disagreement(doc: dict, section: dict) -> None:
    """Columns (mode and isolation level) where the two paths differ are UNKNOWN (a FAIL
    stays FAIL: its forbidden anomaly was found by the batch checks regardless); all of
    them when a difference names no mode or the comparison itself failed."""
    doc["live_vs_batch"] = section
    if section.get("agree", True):
        return
    where = {tuple(w) for w in section.get("where") or []}
    every = not where or any(m == "(unattributed)" for m, _ in where)
    why = (f"the live checks and the batch checks disagree on {section['n_differ']} "
           "anomalies (a bug; verdict.json live_vs_batch lists them)")
    for c in doc["columns"]:
        mine = every or any((c["mode"], iso) in where for iso in c["isolations"])
        if mine and c["verdict"] in (V.PASS, V.SKIPPED):
            c["verdict"] = V.UNKNOWN
            c["reasons"] = [*c.get("reasons", []), why]
