"""The live path after the drain: what it keeps of the histories and the two levels while
a run goes, and the kinds it judges from them at the end (issue 16).

:class:`LiveRemainder` is fed the producers' history chunks (reduced to the batch pass's
own mergeable parts, :func:`verifier.judge.checks.history.attempt_parts` and
``txn_flags``, in an :class:`~verifier.judge.checks.ledger.AttemptLedger`, which keeps
the per-producer counts as it goes), the observer's rows per isolation level (an
:class:`~verifier.judge.definitions.stream_rest.OffsetComparator`: inconsistent offsets) and
the observer's live states (every send attempt both levels hold, in the attempt's
session, is settled; :class:`~verifier.judge.checks.ledger.OpenAttempts`). What the end
does grows with the last minutes of a run and with what is still open, not with the
run: it never groups every send again. :meth:`LiveRemainder.finish` judges what stays open with the
definitions of :mod:`verifier.judge.definitions.stream`: lost / unseen, torn
transactions of the open records, hanging partitions from drain.json, the
inconsistent offsets found, and the aborted reads of transactions that did not commit
without having meant to abort (:class:`TxnReads`: a session killed inside its
transaction, a failed commit; the stream alone knows only the abort intent).

Pure (Arrow and plain rows, no Spark, no files, no clock), so that both users run one
implementation: the follower of a chaos run (:mod:`verifier.assess.follow`, which
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
from verifier.judge.definitions.kinds import NOT_COMMITTED, _ev
from verifier.judge.definitions.stream import LiveChecks
from verifier.judge.definitions.stream_rest import (
    OffsetComparator,
    hanging_rows,
    held,
    missing,
    torn_rows,
)  # fmt: skip
from verifier.judge.model import ABORTED_READ, OBSERVER, READ_COMMITTED, Drain


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
        self.txn_reads = TxnReads(run, self.topics)

    def add_history(self, chunk: pa.Table, fold: bool = True) -> None:
        """New history operations (any producers, with a ``pid`` column); ``fold``: the
        ledger may fold them into its base (not right before :meth:`finish`)."""
        self.open.add(self.ledger.add(chunk, fold))

    def settle(self, states: dict[str, LiveChecks]) -> None:
        """Drop the open attempts every level's state holds in the attempt's session (a
        state only grows: a settled record is never lost nor part of a torn one)."""
        flags = self.ledger.flags()
        self.open.settle(states, flags)
        self.txn_reads.prune(flags)

    def add_observations(self, isolation: str, obs: pa.Table) -> None:
        """The observer's rows at ``isolation``, each partition in offset order (the
        levels in any interleaving), for the offset comparison."""
        self.offsets.apply(isolation, obs)
        self.txn_reads.add(isolation, obs)

    def waiting(self) -> int:
        return self.offsets.waiting()

    def finish(self, states: dict[str, LiveChecks], drain: Drain) -> Remainder:
        """Judge what is still open on the final ``states`` (per isolation level) and
        ``drain`` (drain.json): lost / unseen, torn, hanging, inconsistent offsets, the
        aborted reads the abort intent does not show."""
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
                            lambda t, p, iso=iso: drain.incomplete(t, p, OBSERVER, iso),
                            drain.deleted)
        # torn: only transactions with an open attempt can be partly visible
        txns = cand.filter(pc.is_valid(cand["txn"])).select(H.TXN_KEYS)
        txns = txns.group_by(H.TXN_KEYS).aggregate([])
        records = view.attempts(txns, H.TXN_KEYS)
        rows += torn_rows(states, H.txn_sizes(records, status), records, self.topics)
        rows += hanging_rows(drain.partitions)
        rows += inconsistent
        rows += self.txn_reads.aborted(status, view)
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


class TxnReads:
    """The observer's reads of transactional records not meant to abort whose transaction
    has no ``ok`` commit (yet), per isolation level; at the end, those of a transaction
    that did not commit (``kinds.NOT_COMMITTED``: its session died inside it, its commit
    failed) are aborted reads, as the batch pass reports them (``kinds.aborted``). The
    live checks report the records meant to abort as they arrive; these need the
    history. Memory: the reads of transactions in flight and of those that never commit.

    ``run``: the run id; ``topics``: pid -> its topic."""

    COLUMNS = ["isolation", "topic", "partition", "offset", "pid", "ses", "p", "seq", "txn",
               "ts_send"]  # fmt: skip

    def __init__(self, run: str, topics: dict[str, str]) -> None:
        self.run, self.topics = run, dict(topics)
        self.parts: list[pa.Table] = []

    def __len__(self) -> int:
        return sum(t.num_rows for t in self.parts)

    def add(self, isolation: str, obs: pa.Table) -> None:
        """Keep the rows of ``obs`` (read at ``isolation``) that decode to a record of this
        run at its home (``rules.undecodable`` and ``rules.is_home`` hold nothing against
        it), in a transaction, without abort intent."""
        if obs.num_rows == 0:
            return
        pids = pa.array(list(self.topics), pa.string())
        home = pc.take(pa.array(list(self.topics.values()), pa.string()),
                       pc.index_in(obs["pid"], pids))
        keep = pc.and_(pc.is_valid(obs["txn"]), pc.invert(pc.fill_null(obs["abort"], False)))
        keep = pc.and_(keep, pc.invert(pc.fill_null(obs["foreign"], False)))
        keep = pc.and_(keep, pc.equal(obs["run"], self.run))
        keep = pc.and_(keep, pc.and_(pc.equal(home, obs["topic"]),
                                     pc.equal(obs["p"], obs["partition"])))
        t = obs.filter(pc.fill_null(keep, False)).select(self.COLUMNS[1:])
        if t.num_rows:
            level = pa.array([isolation] * t.num_rows, pa.string())
            self.parts.append(t.add_column(0, "isolation", level).cast(_TXN_READS))

    def prune(self, flags: pa.Table) -> None:
        """Drop the reads of transactions with an ``ok`` commit (``flags``:
        :func:`history.txn_flags` so far)."""
        if not self.parts:
            return
        done = flags.filter(flags["commit_ok"]).select(H.TXN_KEYS).cast(pa.schema(_TXN_KEYS))
        t = pa.concat_tables(self.parts)
        self.parts = [t.join(done, H.TXN_KEYS, join_type="left anti").select(self.COLUMNS)
                      if done.num_rows else t]  # fmt: skip

    def aborted(self, status: pa.Table, view: LedgerView) -> list[dict]:
        """aborted-read rows: each offset a level delivered (once, however often it was
        delivered) of a transaction ``status`` (:func:`history.txn_status`) does not show
        committed, whose identity some history sent."""
        if not self.parts:
            return []
        t = pa.concat_tables(self.parts)
        t = t.group_by(["isolation", "topic", "partition", "offset"], use_threads=False) \
            .aggregate([(c, "first") for c in ("pid", "ses", "p", "seq", "txn", "ts_send")])
        t = t.rename_columns([c.removesuffix("_first") for c in t.column_names])
        st = status.select([*H.TXN_KEYS, "status", "abort_intent"]).cast(
            pa.schema([*_TXN_KEYS, ("status", pa.string()), ("abort_intent", pa.bool_())]))
        t = t.join(st, H.TXN_KEYS, join_type="left outer")
        t = t.filter(pc.is_in(pc.fill_null(t["status"], "open"), pa.array(NOT_COMMITTED)))
        if t.num_rows == 0:
            return []
        ident = t.select(H.IDENTITY).group_by(H.IDENTITY).aggregate([])
        sent = view.attempts(ident, H.IDENTITY).select(H.IDENTITY)
        sent = {tuple(r) for r in zip(*(sent[k].to_pylist() for k in H.IDENTITY), strict=True)}
        return [{"kind": ABORTED_READ, "topic": r["topic"], "partition": r["partition"],
                 "isolation": r["isolation"], "reader": OBSERVER, "pid": r["pid"],
                 "ses": r["ses"], "seq": r["seq"], "txn": r["txn"], "offset": r["offset"],
                 "offsets": [r["offset"]], "t": r["ts_send"],
                 "evidence": _ev(txn_status=r["status"] or "open",
                                 abort_intent=r["abort_intent"])}
                for r in t.sort_by([(k, "ascending") for k in
                                    ("isolation", "topic", "partition", "offset")]).to_pylist()
                if (r["pid"], r["p"], r["seq"]) in sent]  # fmt: skip


_TXN_KEYS = [("pid", pa.string()), ("ses", pa.int32()), ("txn", pa.int64())]
_TXN_READS = pa.schema([("isolation", pa.string()), ("topic", pa.string()),
                        ("partition", pa.int32()), ("offset", pa.int64()),
                        ("pid", pa.string()), ("ses", pa.int32()), ("p", pa.int32()),
                        ("seq", pa.int64()), ("txn", pa.int64()), ("ts_send", pa.int64())])


def _keys_table(keys: list[tuple]) -> pa.Table:
    cols = list(zip(*keys, strict=True)) if keys else [[]] * len(H.ATTEMPT_KEYS)
    types = [pa.string(), pa.int32(), pa.int64(), pa.int32(), pa.int64()]
    return pa.table({k: pa.array(list(c), t)
                     for k, c, t in zip(H.ATTEMPT_KEYS, cols, types, strict=True)})  # fmt: skip
