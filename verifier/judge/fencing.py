"""Foreign fencing: a generator fenced by a producer that is not the tool's.

A transactional id is a lease: whoever calls ``initTransactions`` with it last holds it,
and the coordinator answers every earlier holder ``PRODUCER_FENCED``. The tool's own
generators never fence one another (each has its own id, ``<run id>.<pid>``, and a
generator replaces its producer only after closing the old one), so a fence the tool did
not cause means another client initialised the same transactional id during the run: a
live service sharing the id (``--use-my-ids``), or anyone else. What the generator wrote
after that is not the tool's to judge, and a verdict that says PASS over it would hide
that the run was disturbed: the column is UNKNOWN, with the finding.

A fence is the tool's own, and no finding, when its history explains it:

- an *orphan*: a send of a producer the generator had already replaced (the send was
  invoked before the latest ``producer-id`` line that replaced it in that session), whose
  completion the replacement fenced;
- a *timed-out transaction*: the open transaction began more than the session's
  ``transaction_timeout_ms`` before the error, so the coordinator may have aborted it and
  bumped the epoch itself (a fault that held the producer that long is the tool's).

The fencing errors count (``ProducerFenced``: kafka-python and the Java client;
``PRODUCER_FENCED`` / ``_FENCED``: librdkafka), and so does a partition leader's
``INVALID_PRODUCER_EPOCH`` to a send the producer made with the epoch it holds: an epoch
bump it did not cause. kafka-python meets a foreign ``initTransactions`` that way when a
send is in flight (it then bumps its own epoch, KIP-360, and never sees a fence; measured
on the integration tier's cluster). Such an answer is the tool's own when the producer had
bumped its epoch itself: it follows another error of the producer (the cause of its own
bump, at the same time or before, since the last ``producer-id`` line; the client's
refusals of a call while it bumps are consequences, not causes), or the send was made
before that line. kafka-python's own log of those answers (``client-event`` lines, written
on its sender thread as they happen) counts too: when the generator's main thread then
blocks, no completion reaches the history (measured); there a cause counts by its time,
wherever in the file its completion was written.

:func:`foreign_fences` is pure (history lines in, findings out); :func:`run_fences` reads
a run folder's histories, parsing only the files that hold a fencing error at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

#: the errors that say "another producer initialised this transactional id"
FENCED = re.compile(r"ProducerFenced|PRODUCER_FENCED|\b_FENCED\b")
#: a partition leader's "your epoch is old": someone bumped it (the producer, or another)
OLD_EPOCH = re.compile(r"InvalidProducerEpoch|INVALID_PRODUCER_EPOCH")
_OUTCOMES = ("ok", "info", "fail")
#: the error's name in a longer message (the client's log names the batch first)
_NAMED = re.compile(r"\w*(?:ProducerFenced|PRODUCER_FENCED|InvalidProducerEpoch|"
                    r"INVALID_PRODUCER_EPOCH|_FENCED)\w*")
#: the client refusing a call while it bumps (or after it bumped) its epoch: a consequence
#: of a bump, never its cause (kafka-python writes it in the same completion chunk as the
#: old-epoch answer, in either order)
REFUSED = re.compile(r"IllegalState|Bumping producer epoch")
#: a history without any of these holds neither error: not parsed (client-event lines, the
#: client's log, name the error too)
_WORDS = (b"enced", b"FENCED", b"ProducerEpoch", b"PRODUCER_EPOCH")


@dataclass(frozen=True)
class Fence:
    """The first foreign fence of one producer of a generator's session."""

    ses: int
    t: int  # wall-clock ms of the fenced operation's outcome
    op: str  # the operation it ended: send, commit, abort, offsets
    error: str
    transactional_id: str | None

    def reason(self, pid: str) -> str:
        """The verdict's one line for it."""
        tid = f" {self.transactional_id}" if self.transactional_id else ""
        named = _NAMED.search(self.error)
        error = named.group(0) if named else self.error.split(":")[0]
        return (f"producer {pid} was fenced by a producer that is not the tool's (session "
                f"{self.ses}, {self.op} at {self.t}: {error}): another "
                f"client initialised its transactional id{tid} during the run, so what it "
                "wrote after that is not the tool's to judge")


def foreign_fences(lines: Iterable[Mapping]) -> list[Fence]:
    """The fences of one generator's history (its lines in file order) that the tool did
    not cause: one per producer (each producer it initialised), first error only."""
    lines = list(lines)
    causes = _causes(lines)
    out: list[Fence] = []
    invoked: dict[tuple, int] = {}  # (ses, p, seq) -> index of the send's invoke
    identities = 0  # producer-id lines of the current session
    replaced_at = -1  # index of the latest replacement of the session's producer
    identity_at = -1  # index of the session's latest producer-id line
    errors_since: list[int] = []  # t of the errors since it (the causes of an own bump)
    reported = False  # the current producer's fence is reported already
    tid, timeout, begun = None, None, None
    for i, e in enumerate(lines):
        kind, f = e.get("type"), e.get("f")
        if kind == "session":
            config = e.get("config") or {}
            tid = config.get("transactional_id") or config.get("transactional.id")
            timeout = config.get("transaction_timeout_ms")
            identities, replaced_at, reported, begun = 0, -1, False, None
            identity_at, errors_since = -1, []
        elif kind == "producer-id":
            identities += 1
            identity_at, errors_since = i, []
            if identities > 1:  # the session's producer replaced (or its epoch bumped)
                replaced_at, reported = i, False
        elif kind == "invoke":
            if f == "send":
                invoked[(e.get("ses"), e.get("p"), e.get("seq"))] = i
            elif f == "begin":
                begun = e.get("t")
        elif kind == "client-event":  # the client's own log (producers.transactional)
            error = e.get("error") or ""
            t = int(e.get("t") or 0)
            since = lines[identity_at].get("t", 0) if identity_at >= 0 else 0
            if OLD_EPOCH.search(error) and not reported and not any(
                    since <= c <= t for c in causes.get(e.get("ses"), ())):
                out.append(Fence(int(e.get("ses") or 0), t, "send", error, tid))
                reported = True
        elif kind in _OUTCOMES:
            error = e.get("error") or ""
            fenced = bool(FENCED.search(error)) and \
                not _explained(e, invoked, replaced_at, begun, timeout)
            if not fenced and OLD_EPOCH.search(error):
                fenced = not _own_bump(e, invoked, identity_at, errors_since) and \
                    not _explained(e, invoked, replaced_at, begun, timeout)
            if fenced and not reported:
                out.append(Fence(int(e.get("ses") or 0), int(e.get("t") or 0), str(f),
                                 error, tid))
                reported = True
            if error and not OLD_EPOCH.search(error) and not REFUSED.search(error):
                errors_since.append(e.get("t") or 0)
            if f in ("commit", "abort"):
                begun = None
    return out


def _causes(lines: list[Mapping]) -> dict[object, list[int]]:
    """session -> the times of its errors that can cause the producer's own epoch bump (any
    error but an old-epoch answer or a refusal during a bump), completions and the client's
    log alike: the log is written as it happens, completions may follow later in the file."""
    out: dict[object, list[int]] = {}
    for e in lines:
        if e.get("type") in (*_OUTCOMES, "client-event"):
            error = e.get("error") or ""
            if error and not OLD_EPOCH.search(error) and not REFUSED.search(error):
                out.setdefault(e.get("ses"), []).append(int(e.get("t") or 0))
    return out


def _own_bump(e: Mapping, invoked: dict, identity_at: int, errors_since: list) -> bool:
    """Whether an old-epoch answer can be the producer's own epoch bump: another error of
    it came first (or at the same time: one completion chunk), or the send was made
    before the producer's latest epoch was recorded."""
    t = e.get("t") or 0
    if any(other <= t for other in errors_since):
        return True
    if e.get("f") == "send":
        at = invoked.get((e.get("ses"), e.get("p"), e.get("seq")))
        return at is None or at < identity_at
    return False


def _explained(e: Mapping, invoked: dict, replaced_at: int, begun, timeout) -> bool:
    """Whether the tool's own doing explains this fencing error (module docstring)."""
    if e.get("f") == "send":
        at = invoked.get((e.get("ses"), e.get("p"), e.get("seq")))
        if at is not None and at < replaced_at:
            return True  # an orphan of a replaced producer
    t = e.get("t")
    return (begun is not None and isinstance(timeout, int | float) and t is not None
            and t - begun > timeout)


def run_fences(histories: Path, pids: Iterable[str]) -> dict[str, list[Fence]]:
    """pid -> its foreign fences, from ``RUN/histories/<pid>.jsonl`` (pids without any:
    left out). A file without a fencing error is not parsed."""
    out: dict[str, list[Fence]] = {}
    for pid in pids:
        try:
            data = (Path(histories) / f"{pid}.jsonl").read_bytes()
        except OSError:
            continue
        if not any(word in data for word in _WORDS):
            continue
        lines = []
        for raw in data.splitlines():
            try:
                lines.append(orjson.loads(raw))
            except orjson.JSONDecodeError:
                continue  # a torn last line: the history reader says so elsewhere
        fences = foreign_fences(lines)
        if fences:
            out[pid] = fences
    return out


def fencing_reasons(histories: Path, producers: Mapping[str, str]) -> dict[str, list[str]]:
    """column mode -> the verdict's lines for its generators' foreign fences
    (``producers``: pid -> mode)."""
    out: dict[str, list[str]] = {}
    for pid, fences in run_fences(histories, producers).items():
        out.setdefault(producers[pid], []).extend(f.reason(pid) for f in fences)
    return out


def mark_foreign_fences(doc: dict, reasons: Mapping[str, list[str]]) -> None:
    """Each column whose generators were fenced by a foreign producer (``reasons``: mode
    -> lines, :func:`fencing_reasons`) gets the lines; one that would PASS (or be NOT
    EXERCISED) is UNKNOWN: the run was disturbed, its evidence is not the tool's alone.
    A FAIL stays FAIL, the lines beside it. The run's ``foreign_fences`` lists them all."""
    from verifier.judge.verdict import FAIL, UNKNOWN

    found = []
    for c in doc.get("columns", []):
        lines = reasons.get(c.get("mode"), [])
        if not lines:
            continue
        found += [ln for ln in lines if ln not in found]
        c["reasons"] = [*c.get("reasons", []), *lines]
        if c.get("verdict") != FAIL:
            c["verdict"] = UNKNOWN
    if found:
        doc["foreign_fences"] = found

