"""A known-bug row whose forced event is a kill, not a request (KAFKA-20685): an
application instance SIGKILLed inside a transaction (an ``instance-kill`` with the
``at-risk`` trigger), and what its restart did with its state store, read from the
instance's log (Kafka Streams names both: ``State store counts ... initialized from
checkpoint with offset 11706``, the store kept; ``TaskCorruptedException``, the store
wiped and restored from the changelog).

Such a kill is in its window when the instance was inside a transaction when it died. A
run *shows* the bug when the row's columns found a forbidden anomaly after such a kill
whose restart kept its store at a committed checkpoint (the kill is the only fault of the
scenario: the anomalies are tied to it), and is
*clean* when the restart after it wiped its store (the fix at work: kafka-streams 4.2.2
deletes the checkpoint an exactly-once task wrote at the end of its restoration).
"""

from __future__ import annotations

import re
from pathlib import Path

#: a Kafka Streams store opened from a checkpoint with a committed offset: kept
KEPT = re.compile(r"State store (\S+) initialized from checkpoint with offset (\d+|null)")
#: a Kafka Streams task found corrupted on restart: its stores wiped
WIPED = re.compile(r"TaskCorruptedException: Tasks \[([^\]]*)\]")
#: the line our process runner writes before each start of a child (verifier/harness/procs.py)
START = re.compile(r"^--- \S+ start #(\d+):", re.M)


def killed_in_transaction(ops: list[dict]) -> list[dict]:
    """Each instance an ``instance-kill`` killed, from the nemesis history ``ops``, as a
    forced event (the fields of :func:`verifier.report.forced_evidence.forced_requests`):
    ``in_window`` when it died inside a transaction; ``start``: which start of its process
    the kill ended (1: the first), so that its restart is the next."""
    out, starts = [], {}
    for op in ops:
        if op.get("type") != "ok" or op.get("fault") != "instance-kill" or op.get("f") != "start":
            continue
        for k in (op.get("detail") or {}).get("killed") or []:
            state, process = k.get("state") or {}, str(k.get("process") or "")
            starts[process] = starts.get(process, 0) + 1
            out.append({"hold": None, "request": {"api": "kill", "process": process},
                        "copy": False, "killed": True, "start": starts[process],
                        "held_t": op.get("t"), "released": k.get("trigger") or "its time",
                        "in_window": bool(state.get("in_transaction")),
                        "at_risk": state.get("at_risk"), "trigger": k.get("trigger"),
                        "answer": None, "answered_t": None, "errors": [], "restart": None})
    return out


def restarts(log_text: str) -> list[dict]:
    """Per start of a process in its log (``--- ... start #N``), what its stores did:
    ``kept`` (the checkpoint offsets it kept a store at), ``opened`` (a checkpoint without
    an offset for the store: nothing committed to restore from) and ``wiped`` (whether a
    task was found corrupted and wiped)."""
    marks = list(START.finditer(log_text))
    out = []
    for i, m in enumerate(marks):
        part = log_text[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(log_text)]
        found = [x.group(2) for x in KEPT.finditer(part)]
        out.append({"kept": [int(x) for x in found if x != "null"],
                    "opened": "null" in found, "wiped": bool(WIPED.search(part))})
    return out


def attach_restarts(kills: list[dict], logs: Path) -> None:
    """Give each kill its restart's store outcome, from ``logs/<process>.log`` (the
    process ``app/NAME/I`` logs to ``app-NAME-I.log``)."""
    for k in kills:
        path = logs / (k["request"]["process"].replace("/", "-") + ".log")
        try:
            after = restarts(path.read_text(errors="replace"))
        except OSError:
            continue
        if k["start"] < len(after):
            k["restart"] = after[k["start"]]


def restart_text(kill: dict) -> str:
    """``the restart wiped its store (TaskCorruptedException)``, ``... kept its store at
    checkpoint offset 11706`` or ``... not seen in its log``."""
    r = kill.get("restart")
    if not r:
        return "its restart not seen in its log"
    if r["wiped"]:
        return "the restart wiped its store (TaskCorruptedException)"
    if r["kept"]:
        return f"the restart kept its store at checkpoint offset {r['kept'][-1]}"
    if r.get("opened"):
        return "the restart opened its store from a checkpoint with no committed offset"
    return "the restart neither kept a checkpoint nor wiped"


def kill_text(kill: dict) -> str:
    """One kill in a few words, for the grid."""
    where = (f"inside a transaction ({kill['at_risk']} records at risk)" if kill["in_window"]
             else "outside a transaction")
    return f"SIGKILL of {kill['request']['process']} {where}; {restart_text(kill)}"
