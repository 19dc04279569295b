"""An anomaly's evidence as a sentence: the report says "seq 594 was read at offset 553,
before this record" where verdict.json holds ``{"higher_seq": 594, "higher_seq_offset":
553}``.

One small function per evidence shape, each a pure function of the evidence object
(docs/expectations.md lists the keys per kind); :func:`evidence_text` picks one by the
anomaly's kind. Keys a function does not know are appended as ``key value`` so nothing
in verdict.json is hidden from the report; an evidence shape of a kind not listed here
reads the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from verifier.rundata.vocab import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    LOST,
    REORDER,
    TORN,
    UNSEEN,
)

__all__ = ["evidence_text"]


def _plural(n: object, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") else f"{n} {word}s"


def _offsets(xs: list) -> str:
    return ", ".join(map(str, xs))


def _rest(ev: dict, used: set[str]) -> list[str]:
    """The keys no sentence used, as ``key value`` (nothing dropped)."""
    return [f"{k} {json.dumps(v, sort_keys=True)}" for k, v in sorted(ev.items())
            if k not in used]  # fmt: skip


def reorder(ev: dict) -> tuple[list[str], set[str]]:
    """``{"higher_seq", "higher_seq_offset"}``: a later record of the session came first."""
    if "higher_seq" not in ev:
        return [], set()
    where = (f" at offset {ev['higher_seq_offset']}"
             if ev.get("higher_seq_offset") is not None else "")  # fmt: skip
    return ([f"seq {ev['higher_seq']} was read{where}, before this record"],
            {"higher_seq", "higher_seq_offset"})


def duplicate(ev: dict) -> tuple[list[str], set[str]]:
    """A duplicate of either kind. Batch checks: ``{"copies", "sessions", "first_offset",
    "last_offset"}``; live checks: ``{"sessions", "this_copy"}``; a reader's redelivery:
    ``{"deliveries"}``; a pipeline's extra output copies: see :func:`pipeline`."""
    out, used = [], set()
    if "in_output" in ev:
        return pipeline(ev)
    if "copies" in ev:
        s = f"{_plural(ev['copies'], 'copy')}"
        if "sessions" in ev:
            s += f" from {_plural(ev['sessions'], 'producer session')}"
        out.append(s)
        used |= {"copies", "sessions"}
    elif "sessions" in ev:  # the live checks: this copy repeats an earlier one
        out.append("a repeat within one producer session" if ev["sessions"] == 1 else
                   f"copies from {_plural(ev['sessions'], 'producer session')}")
        used.add("sessions")
    if "first_offset" in ev and "last_offset" in ev:
        out.append(f"the first at offset {ev['first_offset']}, the last at "
                   f"{ev['last_offset']}")
        used |= {"first_offset", "last_offset"}
    if "this_copy" in ev:
        out.append(f"this copy at offset {ev['this_copy']}")
        used.add("this_copy")
    if "deliveries" in ev:
        out.append(f"this offset was delivered {ev['deliveries']} times")
        used.add("deliveries")
    return out, used


def missing(ev: dict) -> tuple[list[str], set[str]]:
    """Lost or unseen. Checks: ``{"acknowledged", "acked_offset", "transactional",
    "in_log", "seen_by"}`` (``in_log`` a flag there); a pipeline: see :func:`pipeline`."""
    if isinstance(ev.get("in_log"), int) and not isinstance(ev.get("in_log"), bool):
        return pipeline(ev)
    out, used = [], set()
    if "acknowledged" in ev:
        if ev["acknowledged"]:
            at = (f" at offset {ev['acked_offset']}" if ev.get("acked_offset") is not None
                  else "")  # fmt: skip
            out.append(f"acknowledged{at}")
        else:
            out.append("never acknowledged")
        used |= {"acknowledged", "acked_offset"}
    if ev.get("transactional"):
        out.append("sent in a transaction")
    used.add("transactional")
    if "in_log" in ev:
        if ev["in_log"]:
            by = f" (read by {ev['seen_by']})" if ev.get("seen_by") else ""
            out.append(f"in the log{by}, but not at this level")
        else:
            out.append("no reader found it in the log")
        used |= {"in_log", "seen_by"}
    return out, used


def pipeline(ev: dict) -> tuple[list[str], set[str]]:
    """A pipeline's record, input against output: ``{"in_log", "in_output", "offsets",
    "read_by_batches", "output_batches", "position"}``."""
    out, used = [], {"in_log", "in_output", "offsets", "read_by_batches", "output_batches",
                     "position"}  # fmt: skip
    if "in_log" in ev and "in_output" in ev:
        at = f" (offset {_offsets(ev['offsets'])})" if ev.get("offsets") else ""
        out.append(f"{_plural(ev['in_log'], 'copy')} in the input log{at}, "
                   f"{ev['in_output']} in the output")
    if ev.get("read_by_batches"):
        out.append(f"read by batch {_offsets(ev['read_by_batches'])}")
    if ev.get("output_batches"):
        out.append(f"written by batch {_offsets(ev['output_batches'])}")
    if ev.get("position") is not None:
        out.append(f"the pipeline had read its partition up to offset {ev['position']}")
    return out, used


_TXN_STATUS = {
    "aborted": "its transaction was aborted",
    "open": "its transaction never ended",
    "abort intended": "its transaction was meant to abort",
    "commit-unknown": "its transaction's commit has no known outcome",
}


def aborted(ev: dict) -> tuple[list[str], set[str]]:
    """``{"txn_status", "abort_intent"}``: the transaction this record belongs to."""
    out = []
    if "txn_status" in ev:
        st = str(ev["txn_status"])
        out.append(_TXN_STATUS.get(st, f"its transaction: {st}"))
    if ev.get("abort_intent") is True and ev.get("txn_status") != "abort intended":
        out.append("the producer meant to abort it")
    elif ev.get("abort_intent") is False:
        out.append("the producer did not mean to abort it")
    return out, {"txn_status", "abort_intent"}


def torn(ev: dict) -> tuple[list[str], set[str]]:
    """``{"records", "visible", "partitions"}``: a committed transaction partly read."""
    if "records" not in ev or "visible" not in ev:
        return [], set()
    parts = ev.get("partitions")
    across = f" (it spans {_plural(parts, 'partition')})" if parts is not None else ""
    return ([f"{ev['visible']} of the transaction's {ev['records']} records were read"
             f"{across}"], {"records", "visible", "partitions"})


def hanging(ev: dict) -> tuple[list[str], set[str]]:
    """``{"end_read_committed", "end_read_uncommitted"}``: the last stable offset behind."""
    if "end_read_committed" not in ev:
        return [], set()
    return ([f"read_committed ends at offset {ev['end_read_committed']}, read_uncommitted "
             f"at {ev.get('end_read_uncommitted')}: an open transaction holds it back"],
            {"end_read_committed", "end_read_uncommitted"})


def inconsistent(ev: dict) -> tuple[list[str], set[str]]:
    """``{"seen", "one", "other", "foreign_seen"}``: readers disagree about one offset;
    ``seen`` names what each reader/level read there."""
    out = []
    if isinstance(ev.get("seen"), dict) and ev["seen"]:
        out.append("; ".join(f"{who} read {what}" for who, what in sorted(ev["seen"].items())))
    elif isinstance(ev.get("one"), dict) and isinstance(ev.get("other"), dict):
        def name(x: dict) -> str:
            return f"{x.get('pid')}:{x.get('p')}:{x.get('seq')}"
        out.append(f"one reader read {name(ev['one'])}, another {name(ev['other'])}")
    if ev.get("foreign_seen"):
        out.append("one of them could not decode it")
    return out, {"seen", "one", "other", "foreign_seen"}


def foreign(ev: dict) -> tuple[list[str], set[str]]:
    """``{"error", "names", "home"}`` (a pipeline's: ``{"error", "batch"}``)."""
    out = []
    names, home = ev.get("names"), ev.get("home")
    if isinstance(names, dict):
        ident = ":".join(str(names.get(k)) for k in ("pid", "p", "seq"))
        s = f"it names {ident}"
        if isinstance(home, dict) and home.get("topic"):
            s += f", whose home is {home['topic']}[{home.get('partition')}]"
        out.append(s)
    if ev.get("error"):
        out.append(str(ev["error"]))
    if ev.get("batch") is not None:
        out.append(f"written by batch {ev['batch']}")
    return out, {"error", "names", "home", "batch"}


_BY_KIND: dict[str, Callable[[dict], tuple[list[str], set[str]]]] = {
    REORDER: reorder, DUP_SAME: duplicate, DUP_CROSS: duplicate, DUP_DELIVERY: duplicate,
    LOST: missing, UNSEEN: missing, ABORTED_READ: aborted, TORN: torn, HANGING: hanging,
    INCONSISTENT: inconsistent, FOREIGN: foreign,
}  # fmt: skip


def evidence_text(kind: str | None, evidence: dict | str | None) -> str:
    """The evidence of one anomaly of ``kind`` as a sentence (``""`` when there is none).
    ``evidence`` as verdict.json holds it: an object, or its JSON text."""
    if isinstance(evidence, str):
        try:
            evidence = json.loads(evidence)
        except ValueError:
            return evidence
    if not evidence:
        return ""
    if not isinstance(evidence, dict):
        return json.dumps(evidence, sort_keys=True)
    said, used = _BY_KIND.get(kind or "", lambda ev: ([], set()))(evidence)
    return "; ".join(said + _rest(evidence, used))
