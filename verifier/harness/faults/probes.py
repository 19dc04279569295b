"""What a process shows now, for the triggers a kill may wait for (pure decisions and
the probes that read the files the processes write).

A probe returns ``(the state found, or None; why not)``: the nemesis looks again until it
finds its state (verifier.harness.faults.triggers.Gate). The decisions
(:func:`mid_batch`, :func:`open_transaction`, :func:`batch_planned`) are pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

from verifier.harness.faults.triggers import NotTriggered
from verifier.rundata.checkpoint import (
    is_committed,
    offset_log_batches,
    planned_end_offsets,
    planned_times,
)
from verifier.rundata.errors import VerifierError
from verifier.rundata.pipelines import parse_marker

#: the tail of a producer history read for its latest transaction
HISTORY_TAIL_BYTES = 256 * 1024


def mid_batch(marker: dict | None, started_at_s: float | None,
              committed: Callable[[int], bool], written: dict | None = None,
              planned: Callable[[int], int | None] = lambda batch: None) -> bool:
    """Whether the marker shows a batch partly written and not committed *now*: present,
    written since the process's latest start (a SIGKILLed predecessor leaves its marker
    behind), its batch, when named, not in the commit log, and, for a hold in the source
    (one task held while the others run), the driver's word that the others have written
    (``written``: the ``holding.written`` file's content, at or after the marker), and
    not empty (``planned``: the offsets the batch planned to read, None if unknown). An
    empty batch holds too (Spark runs a fresh query's batch 0 on empty ranges and calls
    ``foreachBatch`` on it), but its replay writes nothing twice: in a run on the loaded
    machine (2026-11-27) a kill "mid-batch" of that batch 0 replayed nothing."""
    if marker is None:
        return False
    if started_at_s is not None and float(marker["t"]) < started_at_s:
        return False
    if marker.get("where") == "source" and (
            written is None or float(written.get("t", 0)) < float(marker["t"])):
        return False
    batch = marker.get("batch")
    if not isinstance(batch, int):
        return True
    return not committed(batch) and planned(batch) != 0


def open_transaction(events: list[dict]) -> dict | None:
    """From a producer history's latest lines (file order), the transaction it is inside
    now with at least one send, or None: ``{"txn", "sends", "acked"}``, and ``"ending":
    "commit"`` (or ``"abort"``) while its end is asked and not answered yet.

    Open means what the exposure counts as open (verifier.judge.faults.process: from its
    ``begin`` until its commit or abort is *answered*): a transaction whose EndTxn is in
    flight is still open, its outcome unknown to the producer. Read backwards: an answered
    commit or abort of the latest transaction, or a new session, means no open
    transaction; its sends (an invoke or a completion) count until its ``begin``. Without
    its ``begin`` in the lines given (a long transaction), its sends still show it open.
    On a machine where transactions are short (0.1-0.15 s on three local brokers,
    producers.transactional), the commit's round trips are a good part of each one."""
    return _open_in(reversed(events))


def _open_in(latest_first) -> dict | None:
    txn, sends, acked, ending = None, 0, 0, None
    for e in latest_first:
        f, kind = e.get("f"), e.get("type")
        if kind == "session":
            break
        if f in ("commit", "abort"):
            if txn is None or e.get("txn") == txn:
                if kind != "invoke":
                    return None  # answered: ended (or the producer is replaced)
                txn, ending = e.get("txn"), f
            continue
        if f == "send" and e.get("txn") is not None:
            if txn is None:
                txn = e["txn"]
            if e["txn"] == txn:
                sends += kind == "invoke"
                acked += kind == "ok"
            continue
        if f == "begin":
            if txn is None or e.get("txn") == txn:
                break
    if txn is None or sends + acked < 1:
        return None
    out = {"txn": txn, "sends": sends, "acked": acked}
    return {**out, "ending": ending} if ending else out


def tail_events(data: bytes, whole: bool) -> list[dict]:
    """The complete JSON lines of a history's tail: the first line dropped unless
    ``whole`` (the read began mid-line), an unterminated last one always (being written)."""
    return list(reversed(list(_latest_first(data, whole))))


def _history_latest_first(path):
    """The last HISTORY_TAIL_BYTES of a history, its events latest first (OSError when the
    file is not readable)."""
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - HISTORY_TAIL_BYTES))
        data = f.read()
    return _latest_first(data, whole=size <= HISTORY_TAIL_BYTES)


def _latest_first(data: bytes, whole: bool):
    """:func:`tail_events` latest first, each line parsed only when asked for: a look
    every few ms parses the few lines it needs, not the whole tail."""
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a line still being written
    first = 0 if whole else 1
    for i in range(len(lines) - 1, first - 1, -1):
        try:
            obj = json.loads(lines[i])
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


# ----- the probes: what a process shows now -------------------------------------------

def probe_mid_batch(proc) -> tuple[dict | None, str]:
    """(the state to kill in, or None; why not). ``proc``: a pipeline driver
    (``mid_batch_marker``, ``started_at_ms``, ``checkpoint``)."""
    marker_path = getattr(proc, "mid_batch_marker", None)
    if marker_path is None:
        raise NotTriggered(f"{proc.name} does not say when it is mid-batch")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    try:
        marker = parse_marker(Path(marker_path).read_text())
    except OSError:
        marker = None
    try:  # verifier.rundata.pipelines.written_path
        written = parse_marker(Path(f"{marker_path}.written").read_text())
    except OSError:
        written = None
    started = getattr(proc, "started_at_ms", None)
    checkpoint = getattr(proc, "checkpoint", None)

    def committed(batch: int) -> bool:
        return checkpoint is not None and is_committed(checkpoint, batch)

    offsets = getattr(proc, "batch_offsets", None) or (lambda batch: None)
    planned: dict[int, int | None] = {}

    def planned_once(batch: int) -> int | None:
        if batch not in planned:
            planned[batch] = offsets(batch)
        return planned[batch]

    if not mid_batch(marker, None if started is None else started / 1000, committed,
                     written, planned_once):
        if marker is not None and marker.get("where") == "source":
            return None, "a batch held, its other tasks still writing"
        if marker is not None and isinstance(marker.get("batch"), int) and \
                planned_once(marker["batch"]) == 0:
            return None, f"batch {marker['batch']} held, but it is empty"
        return None, "no batch held partly written"
    state = {"mid_batch": True, "batch": marker.get("batch"), "hold": marker.get("where")}
    if isinstance(state["batch"], int):
        state["batch_offsets"] = planned_once(state["batch"])
    return state, ""


def probe_in_transaction(proc) -> tuple[dict | None, str]:
    """(the open transaction, or None; why not). ``proc``: a generator whose
    ``history`` is its history file."""
    path = getattr(proc, "history", None)
    if path is None:
        raise NotTriggered(f"{proc.name} has no history to show a transaction in")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    try:
        latest = _history_latest_first(path)
    except OSError as exc:
        return None, f"its history is not readable ({exc})"
    txn = _open_in(latest)
    if txn is None:
        return None, "no open transaction with a send"
    found = {"in_transaction": True, "txn": txn["txn"], "txn_sends": txn["sends"],
             "txn_acked": txn["acked"]}
    return ({**found, "txn_ending": txn["ending"]} if "ending" in txn else found), ""


def batch_planned(batches: list[tuple[int, float]], started_at_s: float | None,
                  reads: Callable[[int], int | None],
                  committed: Callable[[int], bool]) -> int | None:
    """The latest batch (of ``batches``: (batch id, when its offsets entry was written,
    s)) if it was planned since ``started_at_s``, reads records (``reads``: offsets it
    planned, None if unknown) and is not committed: the batch a kill now leaves in flight
    (its restart asks for those offsets again); else None."""
    if not batches:
        return None
    batch, t = max(batches)
    if (started_at_s is not None and t < started_at_s) or committed(batch):
        return None
    return batch if reads(batch) else None


def probe_batch_planned(proc) -> tuple[dict | None, str]:
    """A pipeline's driver that planned a batch reading records since its latest start
    (``checkpoint``, ``started_at_ms``, ``batch_offsets``): a kill now leaves a checkpoint
    whose restart asks for those offsets again. Unlike ``mid-batch`` it needs no hold:
    on a loaded machine a batch's tasks can outlast any hold."""
    checkpoint = getattr(proc, "checkpoint", None)
    if checkpoint is None:
        raise NotTriggered(f"{proc.name} has no checkpoint")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    started = getattr(proc, "started_at_ms", None)
    found = batch_planned(planned_times(checkpoint),
                          None if started is None else started / 1000,
                          getattr(proc, "batch_offsets", None) or (lambda batch: None),
                          lambda batch: is_committed(checkpoint, batch))
    if found is None:
        return None, "no batch reading records in flight"
    return {"batch": found, "batch_offsets": proc.batch_offsets(found),
            "batch_in_flight": True}, ""


# ----- copy-committed: a restart after a late copy's commit ----------------------------

def copy_answered_at(hold_events: Iterable[dict], since_ms: int = 0) -> int | None:
    """When (ms) the broker first answered a copy the proxy held (a hold with
    ``client_view = "copy"``: its original went through, the copy arrives late), from the
    proxy's hold events (verifier.harness.faults.holds) at or after ``since_ms``; None
    before that. The proxy keeps the events of the runs before on the same cluster (the
    known-bugs profile's repeats): in one, an earlier run's answer fired the kill at once."""
    events = [e for e in hold_events if int(e.get("t", 0)) >= since_ms]
    copies = {e.get("hold") for e in events
              if e.get("event") == "hold" and e.get("client_view") == "copy"}
    return min((int(e["t"]) for e in events
                if e.get("event") == "answer" and e.get("hold") in copies), default=None)


def after_commit_since(events: list[dict], since_ms: int) -> dict | None:
    """From a producer history (file order): once a transaction's commit was answered
    ``ok`` after ``since_ms``, the transaction open after it with a send
    (:func:`open_transaction`), or None: ``{"txn", "sends", "acked", "committed_txn"}``.
    Killed then, a restarted transactional consumer starts from its group's committed
    offsets as that commit left them, before it commits its own again."""
    return _after_commit_in(reversed(events), since_ms)


def _after_commit_in(latest_first, since_ms: int) -> dict | None:
    lines, committed = [], None  # the lines since the latest commit before since_ms
    for e in latest_first:
        if e.get("f") == "commit" and e.get("type") == "ok":
            if int(e.get("t", 0)) <= since_ms:
                break
            committed = e.get("txn")  # going back: the first commit after since_ms
        lines.append(e)
    if committed is None:
        return None
    txn = _open_in(iter(lines))
    if txn is None or not isinstance(txn["txn"], int) or not isinstance(committed, int) \
            or txn["txn"] <= committed:
        return None
    return {**txn, "committed_txn": committed}


def probe_copy_committed(proc, proxy, since_ms: int = 0) -> tuple[dict | None, str]:
    """A generator (``history``) inside a transaction begun after it committed one
    since the proxy's held copy was answered (``proxy.holds()``, at or after
    ``since_ms``: when the fault began to wait)."""
    if proxy is None:
        raise NotTriggered("copy-committed needs the fault proxy, and this run has none")
    path = getattr(proc, "history", None)
    if path is None:
        raise NotTriggered(f"{proc.name} has no history to show a transaction in")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    answered = copy_answered_at(proxy.holds(0), since_ms)
    if answered is None:
        return None, "no held copy answered yet"
    try:
        latest = _history_latest_first(path)
    except OSError as exc:
        return None, f"its history is not readable ({exc})"
    found = _after_commit_in(latest, answered)
    if found is None:
        return None, "no transaction open after a commit since the copy's answer"
    return {"in_transaction": True, "txn": found["txn"], "txn_sends": found["sends"],
            "txn_acked": found["acked"], "committed_txn": found["committed_txn"],
            "copy_answered_ms": answered}, ""


# ----- every column: an observer batch that holds records of each ---------------------

#: {(topic, partition): (start, end)}: the offsets a batch reads
Ranges = Mapping[tuple[str, int], tuple[int, int]]
#: what a column needs of an observer batch: (its name, its topics, the isolation levels
#: it is read at; a batch of any of them will do)
Need = tuple[str, Collection[str], Collection[str]]


def uncovered(in_flight: Mapping[str, Ranges | None], needs: Iterable[Need]) -> list[str]:
    """The columns of ``needs`` that no batch in flight holds a record of: none of the
    batches of its isolation levels (``in_flight``: isolation level -> what the batch its
    query planned and has not committed reads, None when none is in flight) reads an
    offset of its topics. A kill of the observer replays, for each column, the records
    of the batches it leaves in flight (verifier.judge.faults.process counts them): with
    one list empty the column is not exercised by the kill."""
    out = []
    for name, topics, isolations in needs:
        want = set(topics)
        if not any(end > start for iso in isolations
                   for (topic, _), (start, end) in (in_flight.get(iso) or {}).items()
                   if topic in want):
            out.append(name)
    return out


def batch_in_flight(checkpoint: Path) -> tuple[int, dict] | None:
    """(batch id, what it reads) of the batch a query's checkpoint has planned and not
    committed, or None: none, or its range not known (the previous entry gone or either
    entry being written)."""
    try:
        batches = offset_log_batches(checkpoint)
        if not batches or is_committed(checkpoint, batches[-1]):
            return None
        batch = batches[-1]
        end = planned_end_offsets(checkpoint, batch)
        if batch == 0:
            begin: dict = {}
        elif batches[-2:-1] == [batch - 1]:
            begin = planned_end_offsets(checkpoint, batch - 1)
        else:
            return None
    except (OSError, ValueError, VerifierError):
        return None
    return batch, {tp: (begin.get(tp, 0), e) for tp, e in end.items()}


def probe_every_column(proc) -> tuple[dict | None, str]:
    """The observer (``checkpoints``: isolation level -> its query's checkpoint,
    ``column_needs()``: :data:`Need` per producer column) with batches in flight that hold
    records of every column: a kill now makes each column's records replayed."""
    checkpoints = getattr(proc, "checkpoints", None)
    needs = getattr(proc, "column_needs", None)
    if checkpoints is None or needs is None:
        raise NotTriggered(f"{proc.name} does not say what its batches read")
    if not proc.alive:
        return None, f"{proc.name} is not running"
    found = {iso: batch_in_flight(cp) for iso, cp in checkpoints.items()}
    missing = uncovered({iso: f[1] if f else None for iso, f in found.items()}, needs())
    if missing:
        return None, f"no batch in flight holds records of {', '.join(missing)}"
    return {"batch_in_flight": True,
            "batches": {iso: f[0] for iso, f in found.items() if f is not None}}, ""


__all__ = ["Need", "after_commit_since", "batch_in_flight", "batch_planned",
           "copy_answered_at", "mid_batch", "open_transaction", "probe_batch_planned",
           "probe_copy_committed", "probe_every_column", "probe_in_transaction",
           "probe_mid_batch", "tail_events", "uncovered"]
