"""The producers' send attempts kept while a run goes, so that the end of the run touches
only what changed lately (issue 16: the time from drain to verdict must not grow with
the run).

An :class:`AttemptLedger` is fed the histories chunk by chunk. It keeps the batch pass's
own mergeable reduction (:func:`~verifier.judge.checks.history.attempt_parts`, one row per
send attempt key) in two places: a **base**, merged once in a while, and the **recent**
parts since (merged among themselves by size). With the base it keeps what the verdict
counts of it: per producer the identities sent, acknowledged, indeterminate and failed
(:func:`identity_counts`) and per transaction its records that must be visible
(:func:`txn_records`). Folding recent parts into the base changes those by a difference
only: the identities (and transactions) the recent parts touch are taken out of the base
as they were and put back as they are now; nothing else moves. Both are sums over
identities (over attempt rows), so the difference is exact.

At the end :meth:`AttemptLedger.view` does the same without rebuilding the base: the
counts are the base's corrected by the recent parts, and the attempts of a few
identities or transactions (the open ones) are picked from the base by a hash probe and
merged with the recent parts. What it costs is the recent parts (at most
``fold_rows`` attempts, a minute or two of a run) and a scan of the base by C++ kernels;
no group-by over every send of the run.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.checks import history as H
from verifier.judge.definitions.stream import LiveChecks
from verifier.judge.definitions.stream_rest import held

#: the per-producer identity counts (the batch pass's names, ``stats.counts_by_pid``)
COUNT_KEYS = ("sent", "acknowledged", "indeterminate", "failed")
#: recent attempt rows folded into the base once they are this many
FOLD_ROWS = 50_000


def identity_counts(attempts: pa.Table) -> dict[str, dict[str, int]]:
    """Per producer, over the identities of ``attempts`` (:func:`history.attempts`; every
    attempt of each identity in it): sent, acknowledged (some attempt ok), indeterminate
    (none ok, some info) and failed (none ok nor info), as ``history.sends`` classes them."""
    per = attempts.group_by(H.IDENTITY).aggregate([("ok", "any"), ("info", "any")])
    ok, info = per["ok_any"], per["info_any"]
    cols = {"sent": pc.cast(pc.is_valid(per["seq"]), pa.int64()),
            "acknowledged": pc.cast(ok, pa.int64()),
            "indeterminate": pc.cast(pc.and_(pc.invert(ok), info), pa.int64()),
            "failed": pc.cast(pc.and_(pc.invert(ok), pc.invert(info)), pa.int64())}
    t = pa.table({"pid": per["pid"], **cols})
    return {r["pid"]: {k: int(r[f"{k}_sum"] or 0) for k in cols}
            for r in t.group_by("pid").aggregate([(k, "sum") for k in cols]).to_pylist()}


def txn_records(attempts: pa.Table) -> pa.Table:
    """Per transaction of ``attempts`` (:func:`history.attempts`): ``rows``, its attempts
    that ended ok or info, and ``size``, those with a sequence (what
    :func:`history.txn_sizes` counts of a committed one)."""
    a = attempts.filter(pc.and_(pc.is_valid(attempts["txn"]),
                                pc.or_(attempts["ok"], attempts["info"])))
    out = a.group_by(H.TXN_KEYS).aggregate([([], "count_all"), ("seq", "count")])
    return pa.table({**{k: out[k] for k in H.TXN_KEYS},
                     "rows": pc.cast(out["count_all"], pa.int64()),
                     "size": pc.cast(out["seq_count"], pa.int64())})


def committed_counts(records: pa.Table, status: pa.Table) -> dict[str, int]:
    """Per producer, the records of its committed transactions (``records``:
    :func:`txn_records`; ``status``: :func:`history.txn_status`), as the sum of
    :func:`history.txn_sizes` over them."""
    com = status.filter(pc.equal(status["status"], "committed")).select(H.TXN_KEYS)
    got = records.filter(pc.greater(records["rows"], 0)).join(com, H.TXN_KEYS,
                                                               join_type="inner")
    return {r["pid"]: int(r["size_sum"] or 0)
            for r in got.group_by("pid").aggregate([("size", "sum")]).to_pylist()}


def _add(into: dict[str, dict[str, int]], counts: dict[str, dict[str, int]],
         sign: int) -> None:
    for pid, c in counts.items():
        mine = into.setdefault(pid, dict.fromkeys(COUNT_KEYS, 0))
        for k in COUNT_KEYS:
            mine[k] += sign * c[k]


def _sum_records(parts: list[tuple[pa.Table, int]]) -> pa.Table:
    """Per transaction, the signed sum of several :func:`txn_records` tables."""
    t = pa.concat_tables([r if sign > 0 else r.set_column(
        3, "rows", pc.negate(r["rows"])).set_column(4, "size", pc.negate(r["size"]))
        for r, sign in parts])  # fmt: skip
    out = t.group_by(H.TXN_KEYS).aggregate([("rows", "sum"), ("size", "sum")])
    out = pa.table({**{k: out[k] for k in H.TXN_KEYS}, "rows": out["rows_sum"],
                    "size": out["size_sum"]})
    return out.filter(pc.not_equal(out["rows"], 0))


def _pick(t: pa.Table, keys: pa.Table, on: list[str]) -> pa.Table:
    """The rows of ``t`` whose ``on`` columns are a row of ``keys`` (distinct)."""
    if t.num_rows == 0 or keys.num_rows == 0:
        return t.slice(0, 0)
    return t.join(keys.select(on), on, join_type="inner").select(t.column_names)


def _distinct(t: pa.Table, on: list[str]) -> pa.Table:
    t = t.select(on)
    if on == H.TXN_KEYS:
        t = t.filter(pc.is_valid(t["txn"]))
    return t.group_by(on).aggregate([])


@dataclass
class LedgerView:
    """The ledger at one moment (:meth:`AttemptLedger.view`)."""

    base: pa.Table | None
    recent: pa.Table | None  # the recent parts, merged
    counts: dict[str, dict[str, int]]  # identity counts of every attempt
    records: pa.Table  # txn_records of every attempt

    def attempts(self, keys: pa.Table, on: list[str]) -> pa.Table:
        """Every attempt (:func:`history.attempts`) of the identities (``on`` =
        ``history.IDENTITY``) or transactions (``history.TXN_KEYS``) in ``keys``."""
        parts = [_pick(t, keys, on) for t in (self.base, self.recent) if t is not None]
        if not parts:
            return H.attempts(empty_history())
        return H.finish_attempts(H.merge_attempt_parts(parts) if len(parts) > 1
                                 else parts[0])


class AttemptLedger:
    """The histories' send attempts, base and recent parts (module doc)."""

    def __init__(self, fold_rows: int = FOLD_ROWS) -> None:
        self.fold_rows = fold_rows
        self.base: pa.Table | None = None
        self.recent: list[pa.Table] = []
        self.flag_parts: list[pa.Table] = []
        self.counts: dict[str, dict[str, int]] = {}  # identity counts of the base
        self.records = txn_records(H.attempts(empty_history()))  # of the base

    def add(self, chunk: pa.Table, fold: bool = True) -> pa.Table:
        """New history operations (any producers, with a ``pid`` column); returns their
        attempt part (one row per attempt key the chunk names). ``fold``: fold into the
        base if the recent parts are due (not at the end: a fold groups the base)."""
        part = H.attempt_parts(chunk)
        self.flag_parts.append(H.txn_flags(chunk))
        self.recent.append(part)
        # merge parts of similar size (a log-structured merge: n log n over the run)
        for parts, merge in ((self.recent, H.merge_attempt_parts),
                             (self.flag_parts, H.merge_flags)):  # fmt: skip
            while len(parts) > 1 and parts[-1].num_rows * 2 >= parts[-2].num_rows:
                parts[-2:] = [merge(parts[-2:])]
        if fold and sum(p.num_rows for p in self.recent) >= self.fold_rows:
            self.fold()
        return part

    def _delta(self, recent: pa.Table):
        """What ``recent`` changes: the base's rows of the identities it touches as they
        were (``old``) and as they are with it (``new``), and the counts and transaction
        records corrected by them."""
        old = _pick(self.base, _distinct(recent, H.IDENTITY), H.IDENTITY) \
            if self.base is not None else recent.slice(0, 0)
        new = H.merge_attempt_parts([old, recent]) if old.num_rows else recent
        fin_old, fin_new = H.finish_attempts(old), H.finish_attempts(new)
        counts = {pid: dict(c) for pid, c in self.counts.items()}
        _add(counts, identity_counts(fin_old), -1)
        _add(counts, identity_counts(fin_new), +1)
        records = _sum_records([(self.records, 1), (txn_records(fin_old), -1),
                                (txn_records(fin_new), 1)])
        return counts, records

    def fold(self) -> None:
        """The recent parts into the base (the base merged once: a group-by over it)."""
        if not self.recent:
            return
        recent = H.merge_attempt_parts(self.recent)
        self.counts, self.records = self._delta(recent)
        self.base = recent if self.base is None else H.merge_attempt_parts([self.base, recent])
        self.recent = []

    def flags(self) -> pa.Table:
        """:func:`history.txn_flags` of every line so far."""
        if not self.flag_parts:
            return H.txn_flags(empty_history())
        return H.merge_flags(self.flag_parts)

    def view(self) -> LedgerView:
        """Every attempt so far, without folding: the counts corrected by the recent
        parts, which the attempts of given keys are merged with."""
        if not self.recent:
            return LedgerView(self.base, None, {p: dict(c) for p, c in self.counts.items()},
                              self.records)
        recent = H.merge_attempt_parts(self.recent)
        counts, records = self._delta(recent)
        return LedgerView(self.base, recent, counts, records)


class OpenAttempts:
    """The send attempts (pid, ses, txn, p, seq) the end must judge: those not yet held by
    every level's state in the attempt's session (a state only grows: a settled record is
    never lost nor part of a torn transaction).

    What cannot matter at the end is **parked**, so that neither a poll nor the end goes
    over it again; a parked attempt that gets new history lines is open again:

    - an attempt outside transactions that has no ``ok`` line (none yet): its identity can
      be lost or unseen only if it had to be visible, which needs an ``ok`` attempt; one
      that is not parked brings the identity in, and any other attempt is settled, so the
      identity is held (a record at-most-once sent into a timeout and never written stays
      open for ever otherwise);
    - an attempt of a transaction that has failed or aborted (no ``ok`` commit so far): it
      matters only if the transaction ends committed (torn, and what must be visible), so
      the end takes back the parked attempts of the transactions committed by then and
      settles them on the final states (a transaction meant to abort has every record
      open for ever at read_committed otherwise).

    ``topics``: pid -> its topic."""

    def __init__(self, topics: dict[str, str]) -> None:
        self.topics = dict(topics)
        #: open attempt -> some line of it is ok so far
        self.open: dict[tuple, bool] = {}
        self.parked: dict[tuple, bool] = {}

    def __len__(self) -> int:
        return len(self.open) + len(self.parked)

    def add(self, part: pa.Table) -> None:
        """New lines' attempts (an :func:`history.attempt_parts`)."""
        keys = zip(*(part[k].to_pylist() for k in (*H.ATTEMPT_KEYS, "ok")), strict=True)
        for *k, ok in keys:
            k = tuple(k)
            self.open[k] = bool(ok) or self.open.get(k, False) or self.parked.pop(k, False)

    def _held(self, k: tuple, lives: list[LiveChecks]) -> bool:
        return all(held(live, self.topics.get(k[0]), k[0], k[3], k[4], k[1]) for live in lives)

    def settle(self, states: dict[str, LiveChecks], flags: pa.Table | None = None) -> None:
        """Drop the open attempts every level's state holds in the attempt's session; park
        what cannot matter (class doc; ``flags``: :func:`history.txn_flags` so far)."""
        lives = list(states.values())
        failed = _failed_txns(flags) if flags is not None else set()
        for k in [k for k in self.open if self._held(k, lives)]:
            del self.open[k]
        park = [k for k, ok in self.open.items()
                if (k[2] is None and not ok) or (k[2] is not None and k[:3] in failed)]
        for k in park:
            self.parked[k] = self.open.pop(k)

    def candidates(self, states: dict[str, LiveChecks], status: pa.Table) -> list[tuple]:
        """The attempts the end judges (after :meth:`settle` on the final states): the
        open ones and the parked ones of transactions ``status``
        (:func:`history.txn_status`) has committed, unless the final states hold them."""
        com = status.filter(pc.equal(status["status"], "committed")).select(H.TXN_KEYS)
        com = set(zip(*(com[k].to_pylist() for k in H.TXN_KEYS), strict=True))
        lives = list(states.values())
        back = [k for k in self.parked if k[2] is not None and k[:3] in com]
        return [*self.open, *(k for k in back if not self._held(k, lives))]


def _failed_txns(flags: pa.Table) -> set[tuple]:
    """Transactions that failed or aborted and have no ok commit (yet)."""
    f = flags.filter(pc.and_(pc.invert(flags["commit_ok"]),
                             pc.or_(flags["commit_fail"], flags["abort_invoked"])))
    return set(zip(*(f[k].to_pylist() for k in H.TXN_KEYS), strict=True))


def empty_history() -> pa.Table:
    """No history lines, in the follower's schema (with ``pid``)."""
    from verifier.rundata.history import HISTORY_SCHEMA

    t = HISTORY_SCHEMA.empty_table()
    return t.append_column("pid", pa.array([], pa.string()))
