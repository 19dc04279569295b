"""The live path after the drain: what it keeps of the histories and the two levels while
a run goes, and the kinds it judges from them at the end (issue 16).

:class:`LiveRemainder` is fed the producers' history chunks (reduced to the batch pass's
own mergeable parts, :func:`verifier.judge.checks.history.attempt_parts` and
``txn_flags``, in an :class:`~verifier.judge.checks.ledger.AttemptLedger`, which keeps
the per-producer counts as it goes), the observer's rows per isolation level (an
:class:`~verifier.judge.definitions.stream.OffsetComparator`: inconsistent offsets) and
the observer's live states (every send attempt both levels hold, in the attempt's
session, is settled; :class:`~verifier.judge.checks.ledger.OpenAttempts`). What the end
does grows with the last minutes of a run and with what is still open, not with the
run: it never groups every send again. :meth:`LiveRemainder.finish` judges what stays open with the
definitions of :mod:`verifier.judge.definitions.stream`: lost / unseen, torn
transactions of the open records, hanging partitions from drain.json, and the
inconsistent offsets found.

Pure (Arrow and plain rows, no Spark, no files, no clock), so that both users run one
implementation: the follower of a chaos run (:mod:`verifier.orchestration.follow`, which
polls the run's files while it goes, ``verifier analyze`` in one go) and the self-test
(:mod:`verifier.judge.selftest`, which feeds it a mutated copy of a run in one go).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.checks import history as H
from verifier.judge.checks.ledger import (
    AttemptLedger,
    LedgerView,
    OpenAttempts,
    committed_counts,
)  # fmt: skip
from verifier.judge.definitions.stream import (
    LiveChecks,
    OffsetComparator,
    hanging_rows,
    held,
    missing,
    torn_rows,
)  # fmt: skip
from verifier.judge.model import OBSERVER, READ_COMMITTED, Drain


@dataclass
class Remainder:
    """What :meth:`LiveRemainder.finish` judged: the anomaly rows (lost / unseen, torn,
    hanging, inconsistent offsets), the per-producer counts of the histories (sent,
    acknowledged, indeterminate, failed: one per identity, as ``history.sends``;
    committed: as ``history.txn_sizes``) and the transaction outcomes."""

    rows: list[dict]
    counts: dict[str, dict[str, int]]
    status: pa.Table
    open: int  # send attempts judged at the end (still open)


class LiveRemainder:
    """The run's histories and the two levels' rows, followed; :meth:`finish` at the end.

    ``run``: the run id; ``topics``: pid -> its topic (the producers of the run)."""

    def __init__(self, run: str, topics: dict[str, str]) -> None:
        self.topics = dict(topics)
        #: the histories' send attempts and transaction flags, and what they count
        self.ledger = AttemptLedger()
        #: send attempts (pid, ses, txn, p, seq) not yet held by the state at both levels
        self.open = OpenAttempts(self.topics)
        self.offsets = OffsetComparator(run, list(self.topics))

    def add_history(self, chunk: pa.Table, fold: bool = True) -> None:
        """New history operations (any producers, with a ``pid`` column); ``fold``: the
        ledger may fold them into its base (not right before :meth:`finish`)."""
        self.open.add(self.ledger.add(chunk, fold))

    def settle(self, states: dict[str, LiveChecks]) -> None:
        """Drop the open attempts every level's state holds in the attempt's session (a
        state only grows: a settled record is never lost nor part of a torn one)."""
        self.open.settle(states, self.ledger.flags())

    def add_observations(self, isolation: str, obs: pa.Table) -> None:
        """The observer's rows at ``isolation``, each partition in offset order (the
        levels in any interleaving), for the offset comparison."""
        self.offsets.apply(isolation, obs)

    def waiting(self) -> int:
        return self.offsets.waiting()

    def finish(self, states: dict[str, LiveChecks], drain: Drain) -> Remainder:
        """Judge what is still open on the final ``states`` (per isolation level) and
        ``drain`` (drain.json): lost / unseen, torn, hanging, inconsistent offsets."""
        # every attempt so far: the ledger's base corrected by its recent parts
        view = self.ledger.view()
        flags = self.ledger.flags()
        status = H.txn_status(flags, self._seen_committed(flags, view, states))
        open_keys = self.open.candidates(states, status)
        inconsistent = list(self.offsets.found)
        cand = _keys_table(open_keys)
        rows: list[dict] = []
        # lost / unseen: only the identities of the open attempts can be missing; their
        # sends by the batch pass's rule, from their attempts alone
        ident = cand.select(H.IDENTITY).group_by(H.IDENTITY).aggregate([])
        maybe = H.sends(view.attempts(ident, H.IDENTITY), status, self.topics)
        for iso, live in states.items():
            rows += missing(live, maybe,
                            lambda t, p, iso=iso: drain.incomplete(t, p, OBSERVER, iso))
        # torn: only transactions with an open attempt can be partly visible
        txns = cand.filter(pc.is_valid(cand["txn"])).select(H.TXN_KEYS)
        txns = txns.group_by(H.TXN_KEYS).aggregate([])
        records = view.attempts(txns, H.TXN_KEYS)
        rows += torn_rows(states, H.txn_sizes(records, status), records, self.topics)
        rows += hanging_rows(drain.partitions)
        rows += inconsistent
        counts = {pid: dict(c) for pid, c in view.counts.items()}
        for pid, n in committed_counts(view.records, status).items():
            counts.setdefault(pid, {})["committed"] = n
        return Remainder(rows, counts, status, len(open_keys))

    def _seen_committed(self, flags: pa.Table, view: LedgerView, states: dict) -> set:
        """Commits of unknown outcome the read_committed state holds a record of (the
        batch pass asks its read_committed readers the same)."""
        unknown = H.unknown_commits(flags)
        if unknown.num_rows == 0:
            return set()
        rc = states[READ_COMMITTED]
        recs = view.attempts(unknown, H.TXN_KEYS).to_pylist()
        return {(r["pid"], r["ses"], r["txn"]) for r in recs
                if held(rc, self.topics.get(r["pid"]), r["pid"], r["p"], r["seq"], r["ses"])}


def _keys_table(keys: list[tuple]) -> pa.Table:
    cols = list(zip(*keys, strict=True)) if keys else [[]] * len(H.ATTEMPT_KEYS)
    types = [pa.string(), pa.int32(), pa.int64(), pa.int32(), pa.int64()]
    return pa.table({k: pa.array(list(c), t)
                     for k, c, t in zip(H.ATTEMPT_KEYS, cols, types, strict=True)})  # fmt: skip
