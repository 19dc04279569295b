"""What each mode delivered, across the scenarios of a matrix: the grid's cells (verdict and
what was observed) and the "delivered guarantees" summary per mode.

Built from the per-run verdict documents the matrix holds under ``runs`` (the grid of
``verifier.judge.verdict.combine`` carries only verdicts). Plain data first
(:func:`cells`, :func:`summary`), then text renderings; ``html.py``/``matrix.py`` and
``markdown.py`` render the same data.
"""

from __future__ import annotations

from verifier.judge.faults.owners import rebalances_total
from verifier.judge.verdict import VERDICT_ORDER, repeated_outcomes, tally, worst_of
from verifier.rundata.columns import is_pipeline_column
from verifier.rundata.plan import plan_of
from verifier.rundata.vocab import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    KINDS,
    LOST,
    REORDER,
    TORN,
    UNSEEN,
)

MARK = {"forbidden": "x", "tolerated": "~", "expected": "+", "inconclusive": "?", "n/a": "-"}

#: the word a grid cell uses for each kind
SHORT = {
    LOST: "lost", UNSEEN: "unseen", DUP_SAME: "dup", DUP_CROSS: "xdup",
    DUP_DELIVERY: "redelivered", REORDER: "reorder", ABORTED_READ: "aborted", TORN: "torn",
    HANGING: "hanging", INCONSISTENT: "inconsistent", FOREIGN: "foreign",
}  # fmt: skip

#: the same for a column judged by the reference oracle (issue 46: rows, not records)
ROW_WORDS = {**SHORT, LOST: "missing rows", DUP_DELIVERY: "extra rows",
             FOREIGN: "different rows"}
#: a count per key (issue 47, verifier.judge.app_reference): records counted too often
COUNT_WORDS = {**SHORT, LOST: "under-counted", DUP_DELIVERY: "over-counted"}

CELL_LEGEND = (
    "cell = verdict · what was observed: dup = duplicate within one producer session, "
    "xdup = across sessions, redelivered = one offset delivered twice, aborted = aborted "
    "transaction read, torn = committed transaction partly read; "
    "x forbidden (fails the mode), ~ tolerated, + expected, ? leaves the verdict open; "
    "exp N = the column's operations its faults acted on (✗ some fault missed it: NOT "
    "EXERCISED; ? not measured), no fault = none concerned it; liveness = the client "
    "made no progress long after a fault that took its coordinator or leader (a finding "
    "beside the verdict, which it does not change)"
)

#: shown under a grid in which a scenario ran more than once (``chaos --repeat N``)
REPEAT_LEGEND = (
    "repeated cell = each outcome with how many of the scenario's runs gave it, worst "
    "first (FAIL 2/3 · PASS 1/3: two of three runs failed), then what was observed, "
    "summed over the runs"
)

#: the rows of the summary: what a user compares when choosing a mode
SUMMARY_KINDS = (LOST, DUP_SAME, DUP_CROSS, DUP_DELIVERY, REORDER, ABORTED_READ, TORN)

#: how strongly an expectation speaks, to merge one kind across runs
_RANK = {"n/a": 0, "tolerated": 1, "expected": 2, "inconclusive": 3, "forbidden": 4}
_VERDICT_RANK = {v: i for i, v in enumerate(VERDICT_ORDER)}

#: the published source, by title: a report is handed to reviewers, so it cites what
#: they can find, never a path of the development checkout
_HU_XI = ('Hu Xi, "Kafka核心技术与实战" (Kafka core technology and practice, Geek Time '
          "column), lecture 14: idempotent and transactional producers")
#: the Kafka documentation, by section
_KAFKA_DOCS = "Apache Kafka documentation"
#: this project's own documentation page on the anomalies, by title
_OWN_DOCS = 'delivery-verifier documentation, "Expectations, verdicts and verdict.json"'

#: kind -> (title, the mechanism in a few sentences, source)
MECHANISM: dict[str, tuple[str, str, str]] = {
    LOST: (
        "Loss: an acknowledged record is not in the log",
        "With acks=1 the partition leader answers as soon as it has appended the record "
        "to its own log; if it dies or is paused out of the ISR before a follower copied "
        "it, a follower becomes leader and truncates its log to what it has, and the "
        "acknowledged record is gone. With retries=0 a send whose answer was lost is "
        "never repeated. At-most-once accepts both: a message may be lost, never "
        "duplicated.",
        _HU_XI + "; " + _KAFKA_DOCS + ", Replication (acks, ISR, truncation)",
    ),
    DUP_SAME: (
        "Duplicate within a session: the broker appended, the answer was lost, the "
        "producer retried",
        "A produce request reached the leader and was appended, but its response never "
        "came back (connection closed, request timed out). The producer cannot tell "
        "whether it was written, so with retries it sends the same batch again and the "
        "broker appends it a second time. Without idempotence nothing identifies the "
        "batch as a repeat: at-least-once. With enable.idempotence the batch carries "
        "the producer id and a sequence number per partition, and the broker drops the "
        "repeat.",
        _HU_XI,
    ),
    DUP_CROSS: (
        "Duplicate across sessions: a restarted producer re-sends",
        "The idempotent producer's deduplication is per producer id and partition, and a "
        "restarted process gets a new producer id: records the killed session wrote but "
        "never saw acknowledged are re-sent and stored again. Idempotence covers one "
        "session and one partition only; across restarts (and partitions) it takes a "
        "transactional.id, whose initTransactions fences the old epoch and aborts its "
        "open transaction. At read_uncommitted the aborted first attempt and its redo "
        "are both visible.",
        _HU_XI,
    ),
    DUP_DELIVERY: (
        "Redelivery: the reader processed one offset twice",
        "A reader (a Spark query, a consumer group's member) wrote an input record's output "
        "and died or lost its partitions before recording the offset (checkpoint, committed "
        "offset); its successor re-reads and writes it again. A sink keyed by (partition, "
        "offset), or offsets committed in the output's transaction (KIP-447), absorbs it.",
        "Spark Structured Streaming guide, fault tolerance semantics; " + _KAFKA_DOCS,
    ),
    REORDER: (
        "Reorder: a later record before an earlier one",
        "With several requests in flight per connection (max.in.flight > 1) and "
        "retries, request 1 can fail and be retried after request 2 was appended, so "
        "its records land behind request 2's. Idempotence keeps order: the broker "
        "rejects a sequence gap (OutOfOrderSequence) and the producer re-sends in order.",
        _HU_XI + "; " + _KAFKA_DOCS + ", producer configs (max.in.flight.requests.per.connection)",
    ),
    ABORTED_READ: (
        "Aborted read: records of an aborted transaction were delivered",
        "Kafka writes a transaction's records into the log before it knows the outcome; "
        "an abort only appends an abort marker. A read_uncommitted consumer (the default "
        "isolation.level) delivers everything in the log, aborted records included; "
        "read_committed filters them with the markers and the aborted-transaction index.",
        _HU_XI,
    ),
    TORN: (
        "Torn transaction: a committed transaction only partly read",
        "A transaction spans partitions and is committed atomically by markers written "
        "to each. A read_uncommitted reader sees its records as they are appended, "
        "before the commit, so a reader stopping (or a transaction still open) between "
        "them sees part of it; read_committed waits at the last stable offset.",
        _HU_XI,
    ),
    UNSEEN: (
        "Unseen: not delivered, and the drain did not finish",
        "Like loss, but the observer had not caught up with the end of the log when the "
        "run stopped: lost or late; the verdict stays open.",
        _OWN_DOCS,
    ),
    HANGING: (
        "Hanging transaction: the last stable offset stays behind",
        "A transaction left open (its producer gone, nobody re-initialising its "
        "transactional.id) holds read_committed readers at its first offset until the "
        "coordinator aborts it after transaction.timeout.ms.",
        "KIP-664: Provide tooling to detect and abort hanging transactions",
    ),
    INCONSISTENT: (
        "Inconsistent offset: readers disagree about one offset",
        "Two readers saw different records at one (partition, offset): a log truncated "
        "and rewritten after a leader change, or a reader bug.",
        _OWN_DOCS,
    ),
    FOREIGN: (
        "Foreign record: a record no producer history sent",
        "The topic holds a record that does not decode or that no history announced.",
        _OWN_DOCS,
    ),
}


def anchor(column: str, kind: str) -> str:
    """The id of a column's anomaly table in a run's report.html."""
    return "a-" + "".join(ch if ch.isalnum() else "-" for ch in f"{column}-{kind}")


def observed(col: dict) -> list[tuple[str, int, str]]:
    """(kind, count, expectation) of every kind with a non-zero count, in report order."""
    return [(k, col["anomalies"][k]["count"], col["anomalies"][k]["expectation"])
            for k in KINDS if col["anomalies"].get(k, {}).get("count")]  # fmt: skip


def cell_text(verdict: str, seen: list[tuple[str, int, str]], words=None) -> str:
    """``PASS · 1226 dup ~ 438 reorder ~`` (just the verdict when nothing was seen);
    ``words``: each kind's word (default :data:`SHORT`; rows for the reference oracle)."""
    if not seen:
        return verdict
    words = words or SHORT
    return verdict + " · " + " ".join(f"{n} {words.get(k, k)} {MARK[e]}" for k, n, e in seen)


def outcome_text(outcomes: list[str]) -> str:
    """A cell's verdicts over the runs of its scenario: ``PASS`` for one run (as without
    ``--repeat``), ``FAIL 2/3 · PASS 1/3`` for several, worst first."""
    if len(outcomes) == 1:
        return outcomes[0]
    return " · ".join(f"{v} {n}/{len(outcomes)}" for v, n in tally(outcomes))


def _merge(a: list[tuple[str, int, str]], b: list[tuple[str, int, str]]):
    """Two runs of one scenario: counts add up, the stronger expectation stays."""
    acc = {k: (n, e) for k, n, e in a}
    for k, n, e in b:
        n0, e0 = acc.get(k, (0, e))
        acc[k] = (n0 + n, e if _RANK[e] > _RANK[e0] else e0)
    return [(k, *acc[k]) for k in KINDS if k in acc]


def cells(docs: list[dict]) -> dict[str, dict[str, dict]]:
    """scenario -> column -> {"verdict", "outcomes", "observed", "where", "runs", "text"}.

    A scenario run several times (``--repeat N``) has one cell per column: its verdict is
    the worst of ``outcomes`` (one per run, in run order, as
    :func:`verifier.judge.verdict.repeated_outcomes`), ``observed`` the sum of its counts,
    ``where`` the first run folder that observed each kind, ``runs`` the scenario's run
    folders (in the order of ``outcomes``)."""
    out: dict[str, dict[str, dict]] = {}
    runs: dict[str, list[str | None]] = {}
    for doc in docs:
        row = out.setdefault(doc["scenario"], {})
        runs.setdefault(doc["scenario"], []).append(doc.get("run_dir"))
        for c in doc["columns"]:
            seen = observed(c)
            cell = row.setdefault(c["name"], {"observed": [], "where": {}, "exposure": []})
            if c.get("oracle"):  # judged against a fault-free run: its rows differ
                counts = "count" in str(c["oracle"].get("claim"))  # whole numbers
                cell["words"] = COUNT_WORDS if counts else ROW_WORDS
            cell["observed"] = _merge(cell["observed"], seen)
            cell["exposure"].append(c.get("exposure"))
            for k, _, _ in seen:
                cell["where"].setdefault(k, doc.get("run_dir"))
    for sc, row in repeated_outcomes(docs).items():
        for name, outcomes in row.items():
            cell = out[sc][name]
            cell["verdict"], cell["outcomes"], cell["runs"] = worst_of(outcomes), outcomes, runs[sc]
            cell["text"] = cell_text(outcome_text(outcomes), cell["observed"],
                                     cell.get("words"))
            exposed = exposure_text(cell["exposure"])
            if exposed:
                cell["text"] += f" · {exposed}"
    return out


def exposure_text(entries: list[dict | None]) -> str:
    """A cell's exposure over the runs of its scenario (verdict.json ``exposure``):
    ``no fault``, ``exp 1073`` (what the faults that concern the column acted on, summed
    over faults and runs), with ``✗`` when some fault missed it in some run and ``?`` when
    some count was not measured; empty for runs recorded before exposure."""
    known = [e for e in entries if e is not None]
    if not known:
        return ""
    faults = [f for e in known for f in e.get("faults") or []]
    if not faults:
        return "no fault"
    total = sum(f["acted"] for f in faults if f.get("acted") is not None)
    text = f"exp {total}"
    if any(f.get("acted") is None for f in faults):
        text += "?"
    if any(e.get("exercised") is False for e in known):
        text += " ✗"
    seen = [rebalances_total(f.get("instances")) for f in faults if f.get("instances")]
    if any(n is not None for n in seen):  # an application's instances (faults.owners)
        text += f" · {sum(n for n in seen if n is not None)} rebalances"
    stuck = sum(1 for e in known if e.get("liveness"))
    if stuck:  # a finding about the client beside the verdict (verifier.judge.liveness)
        text += " · liveness" + (f" {stuck}/{len(known)}" if len(known) > 1 else "")
    return text


def fault_kinds(doc: dict) -> list[str]:
    """The fault kinds a run injected, in schedule order (``[]``: none)."""
    out: list[str] = []
    for w in doc.get("faults") or []:
        if w.get("fault") and w["fault"] not in out:
            out.append(str(w["fault"]))
    return out


def workload(doc: dict) -> dict:
    """The run's workload from its config.json (``{}`` when unreadable), with the number
    of its generators (``producers``)."""
    plan = plan_of(doc["run_dir"]) if doc.get("run_dir") else None
    if plan is None:
        return {}
    work = dict(plan.workload)
    if plan.producers:  # a pipeline's request is every generator's
        work["producers"] = len(plan.producers)
    return work


def load_of(doc: dict, col: dict, work: dict | None = None) -> dict | None:
    """What a column's generator sent against what the workload asked for: sent,
    requested (rate x duration), achieved and requested rate. None without a duration.
    A pipeline reads every generator's topic: its request is theirs together."""
    work = workload(doc) if work is None else work
    sent = (col.get("counts") or {}).get("sent")
    seconds = work.get("duration_s") or (doc.get("phases") or {}).get(
        "phases_s", {}).get("load+faults")
    if sent is None or not seconds:
        return None
    rate = work.get("rate")
    if rate and is_pipeline_column(col.get("name", "")):
        rate *= work.get("producers") or 1
    return {"sent": sent, "seconds": seconds, "rate": sent / seconds,
            "requested_rate": rate, "requested": round(rate * seconds) if rate else None}


def rate_text(rate: float) -> str:
    """A records/s figure: whole numbers, two digits below 10 (a paced idle run sends
    one record every few seconds, which is not "0/s")."""
    return f"{rate:.0f}" if rate >= 10 or rate == 0 else f"{rate:.2g}"


def load_text(load: dict | None) -> str:
    if load is None:
        return "rate unknown"
    if load["requested"]:
        pct = 100 * load["sent"] / load["requested"] if load["requested"] else 0
        return (f"sent {load['sent']} of {load['requested']} ({pct:.0f}%), "
                f"{rate_text(load['rate'])}/s of {rate_text(load['requested_rate'])}/s")
    return f"sent {load['sent']}, {rate_text(load['rate'])}/s"


def summary(docs: list[dict], workloads: dict[str, dict] | None = None) -> list[dict]:
    """Per report column, across every run: for each kind of :data:`SUMMARY_KINDS` (and any
    other kind seen), the total, the strongest expectation, and where it was seen (the
    scenario, its faults, the count, the run folder); plus the load each run achieved.

    ``workloads``: run id -> workload, instead of reading each run's config.json."""
    by_col: dict[str, dict] = {}
    for doc in docs:
        work = (workloads or {}).get(doc.get("run"))
        for c in doc["columns"]:
            entry = by_col.setdefault(c["name"], {
                "column": c["name"], "mode": c.get("mode"), "verdicts": {},
                "kinds": {k: {"count": 0, "expectation": None, "where": []}
                          for k in SUMMARY_KINDS},
                "load": []})
            v = entry["verdicts"].get(doc["scenario"])
            if v is None or _VERDICT_RANK[c["verdict"]] > _VERDICT_RANK[v]:
                entry["verdicts"][doc["scenario"]] = c["verdict"]
            for k, a in c["anomalies"].items():
                kind = entry["kinds"].get(k)
                e = a.get("expectation")
                if kind is None:
                    if not a.get("count"):
                        continue
                    kind = entry["kinds"][k] = {"count": 0, "expectation": None, "where": []}
                if kind["expectation"] is None or (
                        a.get("count") and (not kind["count"]
                                            or _RANK.get(e, 0) > _RANK[kind["expectation"]])):
                    # what the table says where it was seen (else: what it would say)
                    kind["expectation"] = e
                if a.get("count"):
                    kind["count"] += a["count"]
                    kind["where"].append({"scenario": doc["scenario"], "count": a["count"],
                                          "expectation": e, "faults": fault_kinds(doc),
                                          "run_dir": doc.get("run_dir")})
            load = load_of(doc, c, work)
            if load is not None:
                entry["load"].append({"scenario": doc["scenario"], **load})
    out = list(by_col.values())
    for entry in out:  # report order: the summary kinds first, then others seen
        entry["kinds"] = {k: entry["kinds"][k] for k in KINDS if k in entry["kinds"]}
    return out


def where_text(kind: dict) -> str:
    """``1552 ~ in combined (ack-loss, broker-kill, producer-kill); 30 ~ in ack-loss``."""
    if not kind["count"]:
        return "n/a" if kind["expectation"] == "n/a" else "not observed"
    parts = []
    for w in kind["where"]:
        faults = [f for f in w["faults"] if f != w["scenario"]]
        extra = f" ({', '.join(faults)})" if faults else "" if w["faults"] else " (no fault)"
        parts.append(f"{w['count']} in {w['scenario']}{extra}")
    mark = MARK.get(kind["expectation"] or "", "")
    return f"{kind['count']} {mark}: " + "; ".join(parts)


def render_summary(entries: list[dict]) -> str:
    """The terminal "delivered guarantees" block: one paragraph per mode."""
    lines = []
    width = max(len(k) for k in KINDS)
    for e in entries:
        verdicts = sorted(set(e["verdicts"].values()), key=_VERDICT_RANK.get)
        lines.append(f"{e['column']}: {'/'.join(verdicts)} in {len(e['verdicts'])} "
                     f"scenario(s)")
        base = next((x for x in e["load"] if x["scenario"] == "baseline"), None)
        if base is not None:
            lines.append(f"  {'load (baseline)'.ljust(width)}  {load_text(base)}")
        elif e["load"]:
            lo = min(x["rate"] for x in e["load"])
            hi = max(x["rate"] for x in e["load"])
            lines.append(f"  {'load'.ljust(width)}  {rate_text(lo)}-{rate_text(hi)} records/s")
        for k, kind in e["kinds"].items():
            lines.append(f"  {k.ljust(width)}  {where_text(kind)}")
    return "\n".join(lines)
