"""Exposure: what of each column every fault that concerns it acted on (DESIGN §10).

A verdict is only as good as the faults that reached it: an ack loss that dropped none of
a column's responses, a driver kill between two batches, a broker kill while the column's
generator stood still, all leave a PASS that shows nothing. For each fault window and each
column it concerns this module counts, from data the run already records:

- proxy faults (ack-loss, hold, latency, blackhole, reset): the column's requests and
  responses the rule matched and acted on (the rule's per-client counts, heal detail
  ``clients``);
- broker faults (kill, pause, network partition, broker settings): the column's sends in
  flight at the start or invoked inside the window, to partitions the target broker led
  when the fault started (start detail ``leads``; every partition when not recorded);
- a producer kill: the sends not yet acknowledged and the open transaction's records at
  the kill;
- an observer or pipeline kill: the batches planned and not committed at the kill, with
  their records (from the query's checkpoint: ``offsets/N`` written, ``commits/N`` not);
- and, for faults on the producers' path, the column's sends per second inside the window
  against outside every window: a column whose load stalled (below a tenth of its own rate)
  while the fault was active, and that was not sending when it started, was not tested by
  it.

Pure: plain values in (the nemesis history, the run's producers, sends, transactions and
checkpoint batches, gathered by ``verifier.orchestration.exposure``), a dict per column
out, which ``verdict.json`` holds under ``exposure`` (docs/formats.md). The verdict rule
is :func:`verifier.judge.verdict.apply_exposure`: PASS needs every concerning fault to
have been exercised.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from verifier.judge.load_rates import STALL_RATIO, active_at, load_rates
from verifier.judge.spark_exposure import SPARK_FAULTS, note

PROXY_FAULTS = ("ack-loss", "hold", "latency", "blackhole", "reset")
BROKER_FAULTS = ("broker-kill", "broker-pause", "network-partition", "broker-config")
KILL_FAULTS = ("producer-kill", "observer-kill", "process-kill", "checkpoint-lost",
               "process-pause", *SPARK_FAULTS)
#: the run's topics keep records seconds only: it concerns the pipelines under test, whose
#: unread records it deletes (never a producer column: the log, not the producer, lost them)
TOPIC_FAULTS = ("retention",)
#: Produce's API key: a proxy rule on it concerns every producer column
API_PRODUCE = 0
#: the client id prefix of the tool's generators (producers/: verifier.generator.<pid>)
GENERATOR_PREFIX = "verifier.generator."


@dataclass(frozen=True)
class Sends:
    """One producer's sends: invoke times (ms, sorted), and per send its partition,
    completion time (None: never completed) and transaction (None: none)."""

    invoked: list[int]
    partition: list[int]
    done: list[int | None]
    txn: list[int | None]


@dataclass(frozen=True)
class Txn:
    """One transaction of a producer: begun at ``begin`` (ms), ended (commit or abort
    completed, any outcome) at ``end`` or never."""

    txn: int
    begin: int
    end: int | None


@dataclass(frozen=True)
class Batch:
    """A micro-batch of a streaming query: planned at ``planned`` (ms), committed at
    ``committed`` (None: never), reading ``ranges`` {(topic, partition): (start, end)}."""

    batch: int
    planned: int
    committed: int | None
    ranges: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ColumnSpec:
    """What the exposure needs to know of a report column."""

    name: str
    mode: str
    pids: tuple[str, ...]  # its producers (empty for a pipeline)
    topics: tuple[str, ...]
    transactional: bool = False
    pipeline: str | None = None  # the pipeline's name for a pipeline column
    isolations: tuple[str, ...] = ()


@dataclass
class RunFacts:
    """Everything the exposure is computed from, gathered once per run."""

    nemesis: list[dict]
    columns: list[ColumnSpec]
    sends: dict[str, Sends] = field(default_factory=dict)  # pid -> sends
    txns: dict[str, list[Txn]] = field(default_factory=dict)  # pid -> transactions
    #: reader -> its batches; readers: "observer/<isolation>", "pipeline/<name>"
    batches: dict[str, list[Batch]] = field(default_factory=dict)
    topic_of: dict[str, str] = field(default_factory=dict)  # pid -> topic
    #: client id -> pid, for client ids the tool did not name (a user's client.id)
    client_pid: dict[str, str] = field(default_factory=dict)
    #: "topic-partition" -> log start offset after the drain (where above 0)
    log_start: dict[str, int] = field(default_factory=dict)


# ----- fault windows ---------------------------------------------------------------------

@dataclass
class Window:
    id: int
    fault: str
    target: dict
    start: int | None  # ms; None: the start never happened (not applied)
    end: int | None
    outcome: str  # "ok", "fail" or "info": the start's outcome
    error: str | None
    start_detail: dict
    heal_detail: dict


def windows(nemesis: list[dict]) -> list[Window]:
    """One window per scheduled fault (the final heal-all, id 0, is none)."""
    wins: dict[int, Window] = {}
    for op in nemesis:
        fid = op.get("id")
        if not fid or op.get("type") not in ("ok", "fail", "info"):
            continue
        w = wins.setdefault(fid, Window(fid, str(op.get("fault")), op.get("target") or {},
                                        None, None, "", None, {}, {}))
        if op.get("f") == "start":
            w.outcome, w.error = op["type"], op.get("error")
            w.start_detail = op.get("detail") or {}
            if op["type"] != "fail":
                w.start = int(op["t"])
        elif op.get("f") == "heal":
            w.end = int(op["t"])
            w.heal_detail = op.get("detail") or {}
    return sorted(wins.values(), key=lambda w: w.id)


# ----- which faults concern which columns -------------------------------------------------

def _process_target(w: Window) -> str | None:
    name = w.target.get("process")
    return name if isinstance(name, str) else None


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    """Whether fault ``w`` can change what ``col`` shows."""
    proc = _process_target(w)
    if w.fault in KILL_FAULTS and proc is not None:
        if proc == "observer":
            return col.pipeline is None
        if proc.startswith("pipeline/"):
            return col.pipeline == proc.removeprefix("pipeline/")
        if proc.startswith("producer:"):  # producer:<mode>, or producer:<mode>/<client>
            mode = proc.removeprefix("producer:").split("/")[0]
            return col.pipeline is None and col.mode == mode
        return col.pipeline is None and producers_mode.get(proc) == col.mode
    if w.fault in TOPIC_FAULTS:
        return col.pipeline is not None
    if col.pipeline is not None:  # a pipeline is judged on its own driver's faults
        return False
    if w.fault in PROXY_FAULTS:
        rule = w.start_detail.get("rule") or {}
        keys = rule.get("api_keys") or [API_PRODUCE]
        if API_PRODUCE in keys and not rule.get("transactional_id"):
            return True
        return _client_counts(w, col, None)[0] > 0  # the rule met this column's requests
    return w.fault in BROKER_FAULTS


def _client_counts(w: Window, col: ColumnSpec, facts: RunFacts | None) -> tuple[int, int]:
    """(matched, hits) of the rule for the column's clients."""
    clients = w.heal_detail.get("clients") or {}
    matched = hits = 0
    for client_id, counts in clients.items():
        pid = pid_of_client(client_id, facts.client_pid if facts else {})
        if pid in col.pids:
            matched += int(counts[0])
            hits += int(counts[1])
    return matched, hits


def pid_of_client(client_id: str, extra: dict[str, str]) -> str | None:
    if client_id in extra:
        return extra[client_id]
    if client_id.startswith(GENERATOR_PREFIX):
        return client_id[len(GENERATOR_PREFIX):]
    return None


# ----- what each fault acted on -----------------------------------------------------------

def _in_flight(sends: Sends, start: int, end: int, parts: set[int] | None) -> int:
    """Sends in flight at ``start`` or invoked in [start, end], to ``parts`` (None: all)."""
    n = 0
    hi = bisect.bisect_right(sends.invoked, end)
    for i in range(hi):
        if parts is not None and sends.partition[i] not in parts:
            continue
        done = sends.done[i]
        if sends.invoked[i] >= start or done is None or done >= start:
            n += 1
    return n


def _unacked_at(sends: Sends, t: int) -> int:
    hi = bisect.bisect_right(sends.invoked, t)
    return sum(1 for i in range(hi) if sends.done[i] is None or sends.done[i] > t)


def _open_txn_records(sends: Sends, txns: list[Txn], t: int) -> int:
    open_ids = {x.txn for x in txns if x.begin <= t and (x.end is None or x.end > t)}
    if not open_ids:
        return 0
    hi = bisect.bisect_right(sends.invoked, t)
    return sum(1 for i in range(hi) if sends.txn[i] in open_ids)


def _batch_at(batches: list[Batch], t: int) -> Batch | None:
    """The batch planned and not committed at ``t`` (the replay a kill then forces)."""
    for b in batches:
        if b.planned <= t and (b.committed is None or b.committed > t):
            return b
    return None


def _aged_out(detail: dict, batches: list[Batch]) -> int | None:
    """The records of the batch a kill's detail names as in flight (its trigger saw it
    uncommitted) when the checkpoint no longer keeps it: a query keeps its latest 20
    batches (``spark.sql.streaming.minBatchesToRetain``, streaming.session), and a
    pipeline's 10-s batches on the standalone cluster pass that within a run (2026-11-28:
    a Kafka sink killed in its batch 1 and 2, 300 records written twice, counted 0 from
    a checkpoint starting at batch 3). None when the detail does not say so."""
    batch = detail.get("batch")
    in_flight = detail.get("batch_in_flight", detail.get("mid_batch"))
    if not in_flight or not isinstance(batch, int) or not batches or \
            batch >= min(b.batch for b in batches):
        return None
    offsets = detail.get("batch_offsets")
    return offsets if isinstance(offsets, int) and offsets > 0 else 1


def _records(batch: Batch, topics: Iterable[str] | None) -> int:
    want = None if topics is None else set(topics)
    return sum(max(0, e - s) for (topic, _), (s, e) in batch.ranges.items()
               if want is None or topic in want)


def _led(w: Window, col: ColumnSpec, facts: RunFacts) -> dict[str, set[int]] | None:
    """pid -> partitions the target broker led at the start; None: not recorded."""
    leads = w.start_detail.get("leads")
    if leads is None:
        return None
    led: dict[str, set[int]] = {}
    for pid in col.pids:
        topic = facts.topic_of.get(pid)
        led[pid] = {int(p) for t, p in leads if t == topic}
    return led


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    """(count, what it counts) of the column's operations fault ``w`` acted on; count
    None when this run did not record what is needed to count it."""
    if w.start is None:
        return 0, "not applied"
    end = w.end if w.end is not None else w.start
    proc = _process_target(w)
    if w.fault in PROXY_FAULTS:
        if "clients" not in w.heal_detail:
            if w.heal_detail.get("hits") == 0:
                return 0, "requests or responses acted on (none by the rule)"
            return None, "per-client counts not recorded"
        matched, hits = _client_counts(w, col, facts)
        return hits, f"requests or responses acted on ({matched} matched)"
    if w.fault in BROKER_FAULTS:
        led = _led(w, col, facts)
        n = 0
        for pid in col.pids:
            if pid in facts.sends:
                parts = None if led is None else led[pid]
                n += _in_flight(facts.sends[pid], w.start, end, parts)
        where = "to partitions it led" if led is not None else "to any partition"
        what = f"sends in flight or invoked in the window {where}"
        if col.transactional:  # a commit blocked by the fault is acted on too
            txns = sum(1 for pid in col.pids for x in facts.txns.get(pid, [])
                       if x.begin <= end and (x.end is None or x.end >= w.start))
            n += txns
            what += f", and {txns} transaction(s) open in it"
        return n, what
    if w.fault in TOPIC_FAULTS:
        return _deleted_unread(w, facts.batches.get(f"pipeline/{col.pipeline}", []),
                               facts.log_start)
    if proc is not None and (proc.startswith("pipeline/") or proc == "observer"):
        if proc == "observer":
            readers = [f"observer/{iso}" for iso in col.isolations]
            topics: Iterable[str] | None = col.topics
        else:
            readers, topics = [proc], None
        known = [r for r in readers if r in facts.batches]
        if not known:
            mid = w.start_detail.get("batch_in_flight", w.start_detail.get("mid_batch"))
            if mid is None:
                return None, "checkpoint not found"
            return int(bool(mid)), "batches in flight at the kill (from the kill's detail)"
        n = batches = 0
        for r in known:
            b = _batch_at(facts.batches[r], w.start)
            if b is not None:
                batches += 1
                n += _records(b, topics) if b.ranges else 1
        aged = _aged_out(w.start_detail, facts.batches[proc]) \
            if batches == 0 and known == [proc] else None
        if aged is not None:
            return aged, ("records of 1 batch(es) planned and not committed at the kill "
                          "(from the kill's detail: the checkpoint keeps only its latest "
                          "batches)" + note(w.fault, w.start_detail))
        return n, (f"records of {batches} batch(es) planned and not committed at the kill"
                   + note(w.fault, w.start_detail))
    if w.fault in KILL_FAULTS:  # a producer
        unacked = opened = 0
        for pid in col.pids:
            s = facts.sends.get(pid)
            if s is None:
                continue
            unacked += _unacked_at(s, w.start)
            opened += _open_txn_records(s, facts.txns.get(pid, []), w.start)
        if col.transactional:
            return unacked + opened, (f"sends unacknowledged ({unacked}) and open "
                                      f"transaction records ({opened}) at the {_act(w)}")
        return unacked, f"sends unacknowledged at the {_act(w)}"
    return None, f"no exposure rule for {w.fault}"


def _deleted_unread(w: Window, batches: list[Batch],
                    final: dict[str, int] | None = None) -> tuple[int | None, str]:
    """Records retention deleted in the window that the pipeline had not committed when
    it began: per partition from the larger of its committed position and the log start
    then, up to the log start at the heal (the nemesis's start and heal details) or after
    the drain, whichever is larger: segments the window's retention made eligible can go
    after the heal has read the log start (the judge's ``lost`` uses the drain's)."""
    before, heal = w.start_detail.get("log_start"), w.heal_detail.get("log_start")
    if before is None or heal is None:
        return None, "log start offsets not recorded"
    after = {tp: max(int(gone), (final or {}).get(tp, 0)) for tp, gone in heal.items()}
    position: dict[str, int] = {}
    for b in batches:
        if b.committed is not None and b.committed <= (w.start or 0):
            for (topic, part), (_, end) in b.ranges.items():
                key = f"{topic}-{part}"
                position[key] = max(position.get(key, 0), end)
    n = sum(max(0, int(gone) - max(position.get(tp, 0), int(before.get(tp, 0))))
            for tp, gone in after.items())
    return n, "records deleted by retention before the pipeline read them"


#: faults on the producers' path: a stalled load there means the fault met no traffic
_LOAD_FAULTS = (*PROXY_FAULTS, *BROKER_FAULTS)


# ----- per column -------------------------------------------------------------------------

def column_exposure(col: ColumnSpec, facts: RunFacts, wins: list[Window],
                    producers_mode: dict[str, str]) -> dict:
    """The ``exposure`` entry of one column of verdict.json."""
    invoked = sorted(t for pid in col.pids if pid in facts.sends
                     for t in facts.sends[pid].invoked)  # fmt: skip
    applied = [(w.start, w.end if w.end is not None else w.start) for w in wins
               if w.start is not None and w.fault in _LOAD_FAULTS]  # fmt: skip
    rate_out, rates = load_rates(invoked, applied)
    entries = []
    for w in wins:
        if not concerns(w, col, producers_mode):
            continue
        n, what = acted_on(w, col, facts)
        e = {"id": w.id, "fault": w.fault, "target": w.target, "start": w.start,
             "end": w.end, "applied": {"ok": True, "fail": False}.get(w.outcome),
             "acted": n, "what": what}  # fmt: skip
        reasons = []
        if w.outcome == "fail":
            reasons.append(f"{_name(w)} was not applied: {w.error}")
        elif n == 0:
            reasons.append(f"{_name(w)} acted on none of its operations ({what})")
        if w.start is not None and w.fault in _LOAD_FAULTS and col.pids:
            r_in = rates.get((w.start, w.end if w.end is not None else w.start), 0.0)
            e["rate_in"] = round(r_in, 2)
            e["rate_out"] = None if rate_out is None else round(rate_out, 2)
            active = active_at(invoked, w.start, rate_out)
            stalled = rate_out is not None and r_in < STALL_RATIO * rate_out and not active
            e["stalled"] = stalled
            if stalled:
                reasons.append(f"{_name(w)}: the column's load stalled while it was active "
                               f"({r_in:.1f}/s inside against {rate_out:.1f}/s outside), "
                               "and it was not sending when the fault started")
        if w.outcome == "info":
            e["exercised"] = None  # may not have been applied: UNKNOWN says so
        elif n is None and not reasons:
            e["exercised"] = None
        else:
            e["exercised"] = not reasons
        if reasons:
            e["why"] = "; ".join(reasons)
        entries.append(e)
    verdicts = [e["exercised"] for e in entries]
    exercised = (False if False in verdicts else None if None in verdicts else True)
    return {"exercised": exercised, "faults": entries,
            "reasons": [e["why"] for e in entries if e.get("why")],
            "rate": None if rate_out is None else round(rate_out, 2)}


def _act(w: Window) -> str:
    return "pause" if w.fault == "process-pause" else "kill"


def _name(w: Window) -> str:
    return f"fault {w.fault} #{w.id}"


def exposure(facts: RunFacts) -> dict[str, dict]:
    """Column name -> its exposure (see the module's docstring)."""
    wins = windows(facts.nemesis)
    producers_mode = {pid: c.mode for c in facts.columns for pid in c.pids}
    return {c.name: column_exposure(c, facts, wins, producers_mode) for c in facts.columns}


def summary(entry: dict) -> str:
    """One short line for a cell: what the faults acted on, or ``no fault``."""
    faults = entry.get("faults") or []
    if not faults:
        return "no fault"
    parts = []
    for e in faults:
        n = e.get("acted")
        mark = "" if e.get("exercised") is not False else " ✗"
        parts.append(f"{e['fault']} #{e['id']}: {'?' if n is None else n}{mark}")
    return "; ".join(parts)
