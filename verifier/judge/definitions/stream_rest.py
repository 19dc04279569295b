"""What the live path decides after the drain besides what each micro-batch shows, on
the rules of :mod:`rules`: lost and unseen records, torn transactions (from the final
states of :class:`~verifier.judge.definitions.stream.LiveChecks`), hanging partitions
(from drain.json) and inconsistent offsets between the two isolation levels, compared as
their rows arrive (:class:`OffsetComparator`); and the key that names one anomaly when
the live rows are compared with the batch pass's (:func:`same_anomaly_key`).

The follower (verifier.assess.follow) tails the histories and the observer's files
while the run goes; these apply the rules of :mod:`rules` to what is still open.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.definitions import kinds, rules
from verifier.judge.definitions.frames import IDENT_FIELDS
from verifier.judge.definitions.stream import LiveChecks, slices
from verifier.judge.model import (
    DUP_CROSS,
    DUP_SAME,
    HANGING,
    INCONSISTENT,
    LOST,
    OBSERVER,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REORDER,
    TORN,
    UNSEEN,
)  # fmt: skip


def missing(live: LiveChecks, sends: pa.Table, late, deleted=None) -> list[dict]:
    """lost / unseen after the drain, from the live state and the sends alone: a send
    that had to be visible (``sends``: one row per identity, ``must_see``; see
    :func:`verifier.judge.checks.history.sends`) whose sequence no range of its producer
    holds at its home. ``late(topic, partition)``: is this level's part incomplete
    (unseen rather than lost)? ``deleted(topic, partition, offset)``: did retention
    delete the record before the drain's end (``Drain.deleted``: then it is none)? The
    remainder the batch pass computes with every reader; here for the observer, in time
    proportional to the sends and the ranges."""
    must = sends.filter(pc.fill_null(sends["must_see"], False))
    out = []
    for r in must.select(["topic", "pid", "p", "seq", "t_send", "acked_offset", "ok",
                          "transactional"]).to_pylist():
        st = live.parts.get((r["topic"], r["p"]))
        if st is not None and st.sessions_with(r["pid"], r["seq"]):
            continue
        off = r["acked_offset"]
        if deleted is not None and deleted(r["topic"], r["p"], off):
            continue
        out.append({"kind": UNSEEN if late(r["topic"], r["p"]) else LOST, "topic": r["topic"],
                    "partition": r["p"], "isolation": live.isolation, "reader": live.reader,
                    "pid": r["pid"], "ses": None, "seq": r["seq"], "txn": None, "offset": off,
                    "offsets": None if off is None else [off], "t": r["t_send"],
                    "evidence": kinds._ev(acknowledged=r["ok"], acked_offset=off,
                                          transactional=r["transactional"])})  # fmt: skip
    return out


def held(live: LiveChecks, topic: str, pid: str, p: int, seq: int,
         ses: int | None = None) -> bool:
    """Does the state hold the identity (pid, p, seq) at its home (topic, p): in some
    session, or in session ``ses``?"""
    st = live.parts.get((topic, p))
    if st is None:
        return False
    if ses is None:
        return bool(st.sessions_with(pid, seq))
    r = st.seqs.get(pid, {}).get(ses)
    return r is not None and seq in r


def torn_rows(states: dict[str, LiveChecks], sizes: pa.Table, records: pa.Table,
              topics: dict[str, str]) -> list[dict]:
    """torn-transaction for the observer: a committed transaction (``sizes``: rows of
    :func:`verifier.judge.checks.history.txn_sizes`) of which a level's state holds some,
    not all, records (:func:`rules.torn`). ``records``: the attempt keys (pid, ses, txn,
    p, seq) of those transactions; a record counts as visible when the state holds its
    sequence in the transaction's session at its home, as the batch pass counts the
    records read with the transaction's (pid, ses, txn)."""
    recs: dict[tuple, set] = {}
    for r in records.select(["pid", "ses", "txn", "p", "seq"]).to_pylist():
        recs.setdefault((r["pid"], r["ses"], r["txn"]), set()).add((r["p"], r["seq"]))
    out = []
    for t in sizes.to_pylist():
        key = (t["pid"], t["ses"], t["txn"])
        topic = topics.get(t["pid"])
        for iso, live in states.items():
            visible = sum(held(live, topic, t["pid"], p, seq, t["ses"])
                          for p, seq in recs.get(key, ()))
            if rules.torn(t["size"], visible):
                out.append({"kind": TORN, "topic": topic, "partition": None,
                            "isolation": iso, "reader": live.reader, "pid": t["pid"],
                            "ses": t["ses"], "seq": None, "txn": t["txn"], "offset": None,
                            "offsets": None, "t": t["t"],
                            "evidence": kinds._ev(records=t["size"], visible=visible,
                                                  partitions=t["partitions"])})  # fmt: skip
    return out


def hanging_rows(partitions: list[dict]) -> list[dict]:
    """hanging-transaction from drain.json's end offsets (:func:`rules.hanging`)."""
    return [{"kind": HANGING, "topic": x["topic"], "partition": x["partition"],
             "isolation": None, "reader": None, "pid": None, "ses": None, "seq": None,
             "txn": None, "offset": x["end_read_committed"],
             "offsets": [x["end_read_committed"], x["end_read_uncommitted"]], "t": None,
             "evidence": kinds._ev(end_read_committed=x["end_read_committed"],
                                   end_read_uncommitted=x["end_read_uncommitted"])}
            for x in partitions
            if rules.hanging(x["end_read_committed"], x["end_read_uncommitted"])]  # fmt: skip


def same_anomaly_key(a: dict) -> tuple:
    """What names one anomaly when the live and the batch rows are compared: kind, place
    (isolation, topic, partition) and, by kind, the identity (duplicates: one row per
    identity, at whichever copy made it one), the record (reorder) or the offset
    (delivery duplicates, aborted and foreign records). Evidence and the sample fields
    that depend on the whole run (first offset, every copy's offset) are left out."""
    kind = a["kind"]
    place = (kind, a["isolation"], a["topic"], a["partition"])
    if kind in (DUP_SAME, DUP_CROSS, LOST, UNSEEN):
        return (*place, a["pid"], a["seq"], None)
    if kind == REORDER:
        return (*place, a["pid"], a["seq"], a["offset"])
    if kind == TORN:  # one per transaction (session and number) and level
        return (*place, a["pid"], a["txn"], a["ses"])
    return (*place, None, None, a["offset"])


_GONE = object()


class OffsetComparator:
    """inconsistent-offset between the two isolation levels of one reader, as their rows
    arrive (each level in offset order per partition, the levels in any interleaving).

    Per (topic, partition) and level: the highest offset delivered, and the decoded
    identities (:func:`rules.inconsistent`'s values) of the offsets above the other
    level's highest, waiting for it. When the other level delivers such an offset the two
    are compared and the entry dropped; when it passes it without delivering it (an
    aborted record or a marker at read_committed) the entry is dropped too. Memory is the
    distance between the two levels, not the run. Rows delivered again (a replay) are
    skipped: the first delivery was compared."""

    def __init__(self, run: str, pids, reader: str = OBSERVER) -> None:
        self.run, self.pids, self.reader = run, set(pids), reader
        self.high: dict[tuple[str, int, str], int] = {}
        self.pending: dict[tuple[str, int, str], dict[int, tuple | None]] = {}
        self.found: list[dict] = []

    def waiting(self) -> int:
        return sum(len(d) for d in self.pending.values())

    def apply(self, isolation: str, obs: pa.Table) -> list[dict]:
        """Feed the rows one level delivered (any order of partitions); return the
        inconsistent offsets found."""
        if obs.num_rows == 0:
            return []
        t = obs.select(["topic", "partition", "offset", "run", "pid", "p", "seq", "ses", "txn",
                        "ts_send", "foreign"]).combine_chunks()
        t = t.take(pc.sort_indices(t, [("topic", "ascending"), ("partition", "ascending")]))
        other = next(i for i in (READ_COMMITTED, READ_UNCOMMITTED) if i != isolation)
        out = []
        for topic, part, g in slices(t):
            mine, theirs = (topic, part, isolation), (topic, part, other)
            high = self.high.get(mine, -1)
            g = g.filter(pc.greater(g["offset"], high))
            if g.num_rows == 0:
                continue
            # decoded identity, or None (rules.undecodable's rows: the batch's fgn)
            bad = pc.or_(pc.fill_null(g["foreign"], False),
                         pc.fill_null(pc.not_equal(g["run"], self.run), True))
            bad = pc.or_(bad, pc.invert(pc.fill_null(
                pc.is_in(g["pid"], pa.array(sorted(self.pids), pa.string())), False)))
            cols = [g[f].to_pylist() for f in IDENT_FIELDS]
            offs = g["offset"].to_pylist()
            rows = zip(*cols, strict=True)
            idents = [None if b else tup
                      for b, tup in zip(bad.to_pylist(), rows, strict=True)]  # fmt: skip
            wait = self.pending.setdefault(mine, {})
            there = self.pending.setdefault(theirs, {})
            their_high = self.high.get(theirs, -1)
            for o, ident in zip(offs, idents, strict=True):
                if o > their_high:
                    wait[o] = ident
                    continue
                seen = there.pop(o, _GONE)
                if seen is not _GONE and rules.inconsistent(ident, seen):
                    out.append(self._row(topic, part, o, {isolation: ident, other: seen}))
            self.high[mine] = max(high, offs[-1])
            # the other level's offsets this one has passed without delivering them
            while there and next(iter(there)) <= self.high[mine]:
                there.pop(next(iter(there)))
        self.found += out
        return out

    def _row(self, topic: str, part: int, offset: int, by: dict) -> dict:
        dec = sorted((v for v in by.values() if v is not None),
                     key=lambda v: tuple((0,) if x is None else (1, x) for x in v))
        one = dict(zip(IDENT_FIELDS, dec[0], strict=True)) if dec else None
        other = dict(zip(IDENT_FIELDS, dec[-1], strict=True)) if dec else None
        seen = {f"{self.reader}/{iso}": ("undecodable" if v is None else
                                         f"{v[0]}:{v[1]}:{v[2]} ses {v[3]} txn {v[4]} "
                                         f"sent {v[5]}")
                for iso, v in sorted(by.items())}  # fmt: skip
        return {"kind": INCONSISTENT, "topic": topic, "partition": part, "isolation": None,
                "reader": None, "pid": one and one["pid"], "ses": None,
                "seq": one and one["seq"], "txn": None, "offset": offset, "offsets": [offset],
                "t": one and one["ts_send"],
                "evidence": kinds._ev(one=one, other=other,
                                      foreign_seen=any(v is None for v in by.values()),
                                      seen=seen)}  # fmt: skip
