"""The live path after the drain: what it keeps of the histories and the two levels while
a run goes, and the kinds it judges from them at the end (issue 16).

:class:`LiveRemainder` is fed the producers' history chunks (reduced to the batch pass's
own mergeable parts, :func:`verifier.judge.checks.history.attempt_parts` and
``txn_flags``), the observer's rows per isolation level (an
:class:`~verifier.judge.definitions.stream.OffsetComparator`: inconsistent offsets) and
the observer's live states (every send attempt both levels hold, in the attempt's
session, is settled). :meth:`LiveRemainder.finish` judges what stays open with the
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
    hanging, inconsistent offsets), and the send attempts and transaction outcomes they
    were judged on (the live verdict counts from them)."""

    rows: list[dict]
    attempts: pa.Table
    status: pa.Table
    open: int  # send attempts still open at the end


class LiveRemainder:
    """The run's histories and the two levels' rows, followed; :meth:`finish` at the end.

    ``run``: the run id; ``topics``: pid -> its topic (the producers of the run)."""

    def __init__(self, run: str, topics: dict[str, str]) -> None:
        self.topics = dict(topics)
        self.attempt_parts: list[pa.Table] = []
        self.flag_parts: list[pa.Table] = []
        #: send attempts (pid, ses, txn, p, seq) not yet held by the state at both levels
        self.open: dict[tuple, None] = {}
        self.offsets = OffsetComparator(run, list(self.topics))

    def add_history(self, chunk: pa.Table) -> None:
        """New history operations (any producers, with a ``pid`` column)."""
        part = H.attempt_parts(chunk)
        self.attempt_parts.append(part)
        self.flag_parts.append(H.txn_flags(chunk))
        # merge parts of similar size (a log-structured merge: n log n over the run)
        for parts, merge in ((self.attempt_parts, H.merge_attempt_parts),
                             (self.flag_parts, H.merge_flags)):  # fmt: skip
            while len(parts) > 1 and parts[-1].num_rows * 2 >= parts[-2].num_rows:
                parts[-2:] = [merge(parts[-2:])]
        keys = part.select(H.ATTEMPT_KEYS)
        self.open.update(dict.fromkeys(zip(*(keys[k].to_pylist() for k in H.ATTEMPT_KEYS),
                                           strict=True)))  # fmt: skip

    def settle(self, states: dict[str, LiveChecks]) -> None:
        """Drop the open attempts every level's state holds in the attempt's session (a
        state only grows: a settled record is never lost nor part of a torn one)."""
        lives = list(states.values())
        done = [k for k in self.open
                if all(held(live, self.topics.get(k[0]), k[0], k[3], k[4], k[1])
                       for live in lives)]  # fmt: skip
        for k in done:
            del self.open[k]

    def add_observations(self, isolation: str, obs: pa.Table) -> None:
        """The observer's rows at ``isolation``, each partition in offset order (the
        levels in any interleaving), for the offset comparison."""
        self.offsets.apply(isolation, obs)

    def waiting(self) -> int:
        return self.offsets.waiting()

    def finish(self, states: dict[str, LiveChecks], drain: Drain) -> Remainder:
        """Judge what is still open on the final ``states`` (per isolation level) and
        ``drain`` (drain.json): lost / unseen, torn, hanging, inconsistent offsets."""
        attempts = H.finish_attempts(H.merge_attempt_parts(self.attempt_parts)) \
            if self.attempt_parts else None
        flags = H.merge_flags(self.flag_parts) if self.flag_parts else None
        open_keys = list(self.open)
        inconsistent = list(self.offsets.found)
        if attempts is None:
            attempts = H.finish_attempts(H.attempt_parts(_empty_history()))
            flags = H.txn_flags(_empty_history())
        status = H.txn_status(flags, self._seen_committed(flags, attempts, states))
        cand = _keys_table(open_keys)
        rows: list[dict] = []
        # lost / unseen: only the identities of the open attempts can be missing; their
        # sends by the batch pass's rule, from their attempts alone
        ident = cand.select(["pid", "p", "seq"]).group_by(["pid", "p", "seq"]).aggregate([])
        maybe = H.sends(attempts.join(ident, ["pid", "p", "seq"], join_type="inner"), status,
                        self.topics)
        for iso, live in states.items():
            rows += missing(live, maybe,
                            lambda t, p, iso=iso: drain.incomplete(t, p, OBSERVER, iso))
        # torn: only transactions with an open attempt can be partly visible
        txns = cand.filter(pc.is_valid(cand["txn"])).select(H.TXN_KEYS)
        txns = txns.group_by(H.TXN_KEYS).aggregate([])
        records = attempts.join(txns, H.TXN_KEYS, join_type="inner")
        rows += torn_rows(states, H.txn_sizes(records, status), records, self.topics)
        rows += hanging_rows(drain.partitions)
        rows += inconsistent
        return Remainder(rows, attempts, status, len(open_keys))

    def _seen_committed(self, flags: pa.Table, attempts: pa.Table, states: dict) -> set:
        """Commits of unknown outcome the read_committed state holds a record of (the
        batch pass asks its read_committed readers the same)."""
        unknown = H.unknown_commits(flags)
        if unknown.num_rows == 0:
            return set()
        rc = states[READ_COMMITTED]
        recs = attempts.join(unknown, H.TXN_KEYS, join_type="inner").to_pylist()
        return {(r["pid"], r["ses"], r["txn"]) for r in recs
                if held(rc, self.topics.get(r["pid"]), r["pid"], r["p"], r["seq"], r["ses"])}


def _empty_history() -> pa.Table:
    from verifier.rundata.history import HISTORY_SCHEMA

    t = HISTORY_SCHEMA.empty_table()
    return t.append_column("pid", pa.array([], pa.string()))


def _keys_table(keys: list[tuple]) -> pa.Table:
    cols = list(zip(*keys, strict=True)) if keys else [[]] * len(H.ATTEMPT_KEYS)
    types = [pa.string(), pa.int32(), pa.int64(), pa.int32(), pa.int64()]
    return pa.table({k: pa.array(list(c), t)
                     for k, c, t in zip(H.ATTEMPT_KEYS, cols, types, strict=True)})  # fmt: skip
