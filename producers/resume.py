"""What a restarted generator learns from its previous history (DESIGN §4).

Pure functions over a parsed :class:`~verifier.rundata.history.History`: the next session
number, where each partition's sequence continues, which records were never shown as
acknowledged, and which transactions were never shown as committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifier.rundata.history import History


@dataclass(frozen=True)
class PlannedTxn:
    """A transaction's identity: its number, abort intent and records ``(p, seq)``.

    ``probe``: for a transaction whose last commit was invoked but never answered (the
    process died, or the call ended ``info``), where some of its records were appended:
    ``(partition, offset)``, at most one per partition. Whether the commit happened is
    then read back from the log before the transaction is redone (:mod:`producers.readback`).
    """

    txn: int
    abort: bool
    recs: tuple[tuple[int, int], ...]
    probe: tuple[tuple[int, int], ...] = ()


@dataclass
class ResumeState:
    session: int = 1
    next_seq: dict[int, int] = field(default_factory=dict)
    next_txn: int = 0
    #: sends with no ``ok`` in any session, in first-invocation order: ``(p, seq)``
    unacked: list[tuple[int, int]] = field(default_factory=list)
    #: transactions with no ``ok`` commit and not meant to abort, in first-begin order
    uncommitted: list[PlannedTxn] = field(default_factory=list)


def resume_state(history: History | None) -> ResumeState:
    """Summarise a previous history; ``None`` (no history yet) means a first session."""
    if history is None:
        return ResumeState()
    state = ResumeState(session=max(history.sessions, default=0) + 1)
    invoked: dict[tuple[int, int], None] = {}  # insertion-ordered set
    acked: set[tuple[int, int]] = set()
    begun: dict[int, PlannedTxn] = {}
    committed: set[int] = set()
    commit_open: dict[int, int] = {}  # txn -> session of its last unanswered/info commit
    offsets: dict[tuple[int, int], dict[int, int]] = {}  # (ses, txn) -> p -> first offset
    for e in history.events:
        kind, f = e.get("type"), e.get("f")
        if f == "send":
            ident = (int(e["p"]), int(e["seq"]))
            if kind == "invoke":
                invoked.setdefault(ident)
            elif kind == "ok":
                acked.add(ident)
                if e.get("txn") is not None and e.get("offset") is not None:
                    offsets.setdefault((int(e["ses"]), int(e["txn"])), {}).setdefault(
                        ident[0], int(e["offset"]))
        elif f == "begin" and kind == "invoke":
            # a new attempt: an earlier unanswered commit of it was found not to happen
            commit_open.pop(int(e["txn"]), None)
            offsets.pop((int(e["ses"]), int(e["txn"])), None)
            recs = tuple((int(p), int(s)) for p, s in e.get("recs", ()))
            begun.setdefault(int(e["txn"]), PlannedTxn(int(e["txn"]), bool(e["abort"]), recs))
        elif f == "commit":
            txn = int(e["txn"])
            if kind == "ok":
                committed.add(txn)
            elif kind in ("invoke", "info"):
                commit_open[txn] = int(e["ses"])
            else:  # fail: definitely not committed
                commit_open.pop(txn, None)
    planned = list(invoked) + [r for t in begun.values() for r in t.recs]
    for p, seq in planned:
        state.next_seq[p] = max(state.next_seq.get(p, 0), seq + 1)
    state.next_txn = max(begun, default=-1) + 1
    state.unacked = [r for r in invoked if r not in acked]
    state.uncommitted = [
        PlannedTxn(n, t.abort, t.recs, tuple(sorted(offsets.get((commit_open[n], n), {})
                                                    .items())) if n in commit_open else ())
        for n, t in begun.items() if n not in committed and not t.abort
    ]  # fmt: skip
    return state
