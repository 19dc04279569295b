"""The live checks: the definitions of :mod:`kinds`, applied to each micro-batch as it arrives.

One :class:`LiveChecks` per isolation level (one per streaming query) keeps a
:class:`PartitionState` per (topic, partition). Kafka delivers each partition in offset
order, and a micro-batch continues where the last one ended, so a record's first copy is
the first time its identity arrives and a delivery duplicate is an offset below what was
already delivered. The state is what is still needed to judge the next record:

- per (producer, session): the **ranges** of sequences its copies carried (sequence numbers
  are dense per partition, so a clean session is one range however long it runs; a gap
  is a record never seen at this level, a loss or an aborted record at read_committed) and
  the highest first copy (sequence, offset), for reorders;
- per producer and duplicate kind: ranges of the identities already reported (one
  anomaly per identity, as the batch pass reports them);
- the next offset to be delivered, and ranges of offsets already reported as redelivered.

Memory grows with gaps and anomalies, never with the number of records. Each rule is
the function :mod:`rules` holds for both paths: :func:`rules.duplicate_kinds`,
:func:`rules.reordered`, :func:`rules.redelivered`, :func:`rules.undecodable` and
:func:`rules.is_home`. What needs a history (lost, unseen, torn, hanging, records of
transactions that did not commit without having meant to abort, identities no history
sent) is left to the batch pass after the drain; aborted reads are judged here by the
records' abort intent (docs/expectations.md §1.1); what the live path decides after the
drain is in :mod:`stream_rest`.

A clean slice of a partition (one producer session, new and increasing sequences, no
redelivery, nothing foreign) is taken in Arrow; anything else goes record by record.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.definitions import kinds, rules
from verifier.judge.model import (
    ABORTED_READ,
    ANOMALY_COLUMNS,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    OBSERVER,
    REORDER,
)  # fmt: skip
from verifier.rundata.formats import check_header, header

STATE_FORMAT = "live-state"
#: the kinds the live path decides alone (what a stream carries is enough)
LIVE_KINDS = (DUP_SAME, DUP_CROSS, DUP_DELIVERY, REORDER, ABORTED_READ, FOREIGN)
#: the observation columns the live checks read
COLUMNS = ("topic", "partition", "offset", "run", "pid", "ses", "p", "seq", "txn", "abort",
           "ts_send", "ts_broker", "foreign", "error")  # fmt: skip
FIELDS = [name for name, _ in ANOMALY_COLUMNS]
#: an aborted read's evidence, the same for every record (many at read_uncommitted)
_ABORT_INTENDED = kinds._ev(txn_status="abort intended", abort_intent=True)


class Ranges:
    """A set of integers held as sorted, disjoint, non-touching closed ranges."""

    __slots__ = ("lo", "hi")

    def __init__(self, flat: list[int] | None = None) -> None:
        self.lo: list[int] = list((flat or [])[0::2])
        self.hi: list[int] = list((flat or [])[1::2])

    def __contains__(self, x: int) -> bool:
        i = bisect_right(self.lo, x) - 1
        return i >= 0 and x <= self.hi[i]

    def __len__(self) -> int:
        return len(self.lo)

    def add(self, a: int, b: int | None = None) -> None:
        """Add ``a`` (or the range ``a..b``)."""
        b = a if b is None else b
        if self.lo and a >= self.lo[-1]:  # the common case: at or after the last range
            if a <= self.hi[-1] + 1:
                self.hi[-1] = max(self.hi[-1], b)
            else:
                self.lo.append(a)
                self.hi.append(b)
            return
        i = bisect_left(self.hi, a - 1)  # first range ending at or after a - 1
        j = bisect_right(self.lo, b + 1)  # ranges i..j-1 overlap or touch a..b
        if i < j:
            a, b = min(a, self.lo[i]), max(b, self.hi[j - 1])
        self.lo[i:j], self.hi[i:j] = [a], [b]

    def top(self) -> int | None:
        return self.hi[-1] if self.hi else None

    def flat(self) -> list[int]:
        return [v for pair in zip(self.lo, self.hi, strict=True) for v in pair]


@dataclass
class PartitionState:
    """What one (topic, partition) needs to judge its next record at one level."""

    next_offset: int = 0  # one past the highest offset delivered
    seqs: dict[str, dict[int, Ranges]] = field(default_factory=dict)  # pid -> ses -> seqs
    best: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    reported: dict[tuple[str, str], Ranges] = field(default_factory=dict)  # (kind, pid)
    redelivered: Ranges = field(default_factory=Ranges)  # offsets reported

    def sessions_with(self, pid: str, seq: int) -> list[int]:
        return [s for s, r in self.seqs.get(pid, {}).items() if seq in r]

    def top(self, pid: str) -> int | None:
        tops = [t for r in self.seqs.get(pid, {}).values() if (t := r.top()) is not None]
        return max(tops) if tops else None

    def ranges(self) -> int:
        return (sum(len(r) for s in self.seqs.values() for r in s.values())
                + sum(len(r) for r in self.reported.values()) + len(self.redelivered))

    def to_json(self) -> dict:
        return {"next": self.next_offset,
                "seqs": {p: {str(s): r.flat() for s, r in by.items()}
                         for p, by in self.seqs.items()},
                "best": [[p, s, q, o] for (p, s), (q, o) in self.best.items()],
                "reported": [[k, p, r.flat()] for (k, p), r in self.reported.items()],
                "redelivered": self.redelivered.flat()}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict) -> PartitionState:
        return cls(next_offset=d["next"],
                   seqs={p: {int(s): Ranges(r) for s, r in by.items()}
                         for p, by in d["seqs"].items()},
                   best={(p, s): (q, o) for p, s, q, o in d["best"]},
                   reported={(k, p): Ranges(r) for k, p, r in d["reported"]},
                   redelivered=Ranges(d["redelivered"]))  # fmt: skip


class LiveChecks:
    """The live checks of one isolation level, fed one micro-batch at a time.

    ``topics``: the run's producers (pid -> its topic); ``run``: the run id (rows of
    other runs, undecodable rows and unknown producers are foreign records).
    """

    def __init__(self, run: str, isolation: str, topics: dict[str, str],
                 reader: str = OBSERVER) -> None:
        self.run, self.isolation, self.reader = run, isolation, reader
        self.topics = dict(topics)
        self.parts: dict[tuple[str, int], PartitionState] = {}
        self.rows = 0  # rows delivered (every row, replays of the naive sink included)
        self.records: dict[str, int] = {}  # pid -> first copies (distinct identities)
        self.counts: dict[str, dict[str, int]] = {}  # owner (pid or topic:T) -> kind -> n
        self.batch: int | None = None  # the last batch applied

    # -- feeding ---------------------------------------------------------------------

    def apply(self, obs: pa.Table, batch: int | None = None) -> list[dict]:
        """Judge one micro-batch (observation rows, in the order they were delivered);
        return its anomaly rows (:data:`verifier.judge.model.ANOMALY_COLUMNS`)."""
        out: list[dict] = []
        if obs.num_rows:
            t = obs.select(list(COLUMNS)).combine_chunks()
            # stable: within a partition the delivery order (offset order) is kept
            t = t.take(pc.sort_indices(t, [("topic", "ascending"),
                                           ("partition", "ascending")]))  # fmt: skip
            for topic, part, g in slices(t):
                st = self.parts.setdefault((topic, part), PartitionState())
                if not self._clean(st, topic, part, g, out):
                    at = {"topic": topic, "partition": part}
                    for r in g.to_pylist():
                        self._row(st, at, r, out)
            self.rows += obs.num_rows
        self.batch = batch if batch is not None else self.batch
        for a in out:
            owner = a["pid"] if a["pid"] in self.topics else f"topic:{a['topic']}"
            by = self.counts.setdefault(owner, {})
            by[a["kind"]] = by.get(a["kind"], 0) + 1
        return out

    def _clean(self, st: PartitionState, topic: str, part: int, g: pa.Table,
               out: list[dict]) -> bool:
        """A slice of one producer session at home, on new offsets, in Arrow where it can
        be: each run of rows whose sequence is above every sequence seen so far (a first
        copy: no duplicate, no reorder) is added as ranges at once; the rows between those
        runs (duplicates, reorders) go through :meth:`_row` in their order. False (nothing
        changed): the slice needs :meth:`_row` throughout."""
        off, seq = g["offset"], g["seq"]
        if off[0].as_py() < st.next_offset or pc.any(g["foreign"]).as_py():
            return False
        pid, ses = g["pid"][0].as_py(), g["ses"][0].as_py()
        if (self.topics.get(pid) != topic or pc.count_distinct(g["pid"]).as_py() != 1
                or pc.count_distinct(g["ses"]).as_py() != 1
                or pc.count_distinct(g["p"]).as_py() != 1 or g["p"][0].as_py() != part
                or pc.any(pc.is_null(g["seq"])).as_py()
                or pc.any(pc.is_null(g["run"])).as_py()
                or pc.any(pc.not_equal(g["run"], self.run)).as_py()):  # fmt: skip
            return False
        top = st.top(pid)
        floor = -1 if top is None else top
        # the highest sequence before each row (the state's, then the slice's own)
        before = pc.max_element_wise(
            pa.concat_arrays([pa.array([floor], pa.int64()),
                              pc.cumulative_max(seq.combine_chunks())[:-1]]), floor)
        high = pc.greater(seq, before)
        change = pc.not_equal(high[1:], high[:-1]) if g.num_rows > 1 else pa.array([], pa.bool_())
        cuts = [0, *pc.add(pc.indices_nonzero(change), 1).to_pylist(), g.num_rows]
        meant = pc.and_(pc.fill_null(g["abort"], False), pc.is_valid(g["txn"]))
        at = {"topic": topic, "partition": part}
        for a, b in zip(cuts, cuts[1:], strict=False):
            part_rows = g.slice(a, b - a)
            if high[a].as_py():
                self._new_run(st, pid, ses, part_rows, out, at, meant.slice(a, b - a))
            else:
                for r in part_rows.to_pylist():
                    self._row(st, at, r, out)
        return True

    def _new_run(self, st: PartitionState, pid: str, ses: int, g: pa.Table, out: list[dict],
                 at: dict, meant) -> None:
        """Rows each above every sequence seen before it: first copies in order, so no
        duplicate and no reorder; their sequences as ranges, their aborted reads."""
        off, seq = g["offset"], g["seq"]
        n = g.num_rows
        step = pc.subtract(seq[1:], seq[:-1]) if n > 1 else pa.array([], pa.int64())
        breaks = pc.indices_nonzero(pc.not_equal(step, 1)).to_pylist() if n > 1 else []
        ranges = st.seqs.setdefault(pid, {}).setdefault(ses, Ranges())
        first = 0
        for b in [*breaks, n - 1]:
            ranges.add(seq[first].as_py(), seq[b].as_py())
            first = b + 1
        last = (seq[-1].as_py(), off[-1].as_py())
        st.best[(pid, ses)] = max(st.best.get((pid, ses), last), last)
        self.records[pid] = self.records.get(pid, 0) + n
        st.next_offset = max(st.next_offset, off[-1].as_py() + 1)
        if pc.any(meant).as_py():
            for r in g.filter(meant).to_pylist():
                out.append(self._aborted(at, r))

    def _row(self, st: PartitionState, at: dict, r: dict, out: list[dict]) -> None:
        """One record, in delivery order: every live rule."""
        o = r["offset"]
        again = o < st.next_offset
        st.next_offset = max(st.next_offset, o + 1)
        # a redelivery: the state already holds this offset's second delivery onwards
        if again and rules.redelivered(2) and o not in st.redelivered:
            st.redelivered.add(o)
            out.append(self._anomaly(DUP_DELIVERY, at, r, [o], {"deliveries": "2 or more"}))
        why = rules.undecodable(r, self.run, self.topics)
        if why is not None:  # one per row, as the batch check reports them
            out.append(self._anomaly(FOREIGN, at, r, [o], {"error": why, "run": r["run"]},
                                     t=r["ts_broker"], ident=False))
            return
        if again:
            return
        pid, ses, seq = r["pid"], r["ses"], r["seq"]
        if not rules.is_home(pid, r["p"], at["topic"], at["partition"], self.topics):
            home = {"topic": self.topics.get(pid), "partition": r["p"]}
            out.append(self._anomaly(FOREIGN, at, r, [o], {
                "error": "identity names another partition",
                "names": {f: r[f] for f in ("pid", "p", "seq", "ses", "txn")}, "home": home}))
            return
        if r["txn"] is not None and r["abort"]:
            out.append(self._aborted(at, r))
        before = st.sessions_with(pid, seq)
        if not before:
            self._first_copy(st, at, r, out)
        else:
            self._copy(st, at, r, before, out)
        st.seqs.setdefault(pid, {}).setdefault(ses, Ranges()).add(seq)

    def _first_copy(self, st: PartitionState, at: dict, r: dict, out: list[dict]) -> None:
        key, cur = (r["pid"], r["ses"]), (r["seq"], r["offset"])
        best = st.best.get(key)
        if best is not None and rules.reordered(r["seq"], best[0]):
            out.append(self._anomaly(REORDER, at, r, [best[1], r["offset"]],
                                     {"higher_seq": best[0], "higher_seq_offset": best[1]}))
        if best is None or cur > best:
            st.best[key] = cur
        self.records[r["pid"]] = self.records.get(r["pid"], 0) + 1

    def _copy(self, st: PartitionState, at: dict, r: dict, before: list[int],
              out: list[dict]) -> None:
        """A later copy of an identity: the duplicate kinds it makes true, each once."""
        pid, seq = r["pid"], r["seq"]
        sessions = set(before) | {r["ses"]}
        same = st.reported.get((DUP_SAME, pid))
        twice = r["ses"] in before or (same is not None and seq in same)
        # copies > sessions exactly when some session holds two: the count up to that
        copies = len(sessions) + (1 if twice else 0)
        for kind in rules.duplicate_kinds(copies, len(sessions)):
            done = st.reported.setdefault((kind, pid), Ranges())
            if seq not in done:
                done.add(seq)
                out.append(self._anomaly(kind, at, r, [r["offset"]],
                                         {"sessions": len(sessions), "this_copy": r["offset"]}))

    def _aborted(self, at: dict, r: dict) -> dict:
        return {"kind": ABORTED_READ, **at, "isolation": self.isolation, "reader": self.reader,
                "pid": r["pid"], "ses": r["ses"], "seq": r["seq"], "txn": r["txn"],
                "offset": r["offset"], "offsets": [r["offset"]], "t": r["ts_send"],
                "evidence": _ABORT_INTENDED}  # fmt: skip

    def _anomaly(self, kind: str, at: dict, r: dict, offsets: list[int], evidence: dict,
                 t: int | None = None, ident: bool = True) -> dict:
        return {"kind": kind, **at, "isolation": self.isolation, "reader": self.reader,
                "pid": r["pid"], "ses": r["ses"] if ident else None,
                "seq": r["seq"], "txn": r["txn"] if ident else None, "offset": r["offset"],
                "offsets": offsets, "t": r["ts_send"] if t is None else t,
                "evidence": kinds._ev(**evidence)}  # fmt: skip

    # -- what it holds ---------------------------------------------------------------

    def ranges(self) -> int:
        """The size of the state: ranges held over every partition."""
        return sum(st.ranges() for st in self.parts.values())

    def summary(self) -> dict:
        """Counts so far: rows, distinct records per producer, anomalies per owner."""
        return {"isolation": self.isolation, "batch": self.batch, "rows": self.rows,
                "records": dict(self.records), "anomalies": self.counts,
                "ranges": self.ranges()}  # fmt: skip

    def to_json(self) -> dict:
        return {**header(STATE_FORMAT), "run": self.run, "isolation": self.isolation,
                "reader": self.reader, "topics": self.topics, "batch": self.batch,
                "rows": self.rows, "records": self.records, "counts": self.counts,
                "partitions": [{"topic": t, "partition": p, **st.to_json()}
                               for (t, p), st in sorted(self.parts.items())]}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict, source) -> LiveChecks:
        check_header(source, d, STATE_FORMAT)
        live = cls(d["run"], d["isolation"], d["topics"], d["reader"])
        live.batch, live.rows = d["batch"], d["rows"]
        live.records, live.counts = d["records"], d["counts"]
        live.parts = {(x["topic"], x["partition"]): PartitionState.from_json(x)
                      for x in d["partitions"]}  # fmt: skip
        return live


def slices(t: pa.Table):
    """(topic, partition, rows) of a table sorted by topic and partition."""
    tp, pp = t["topic"], t["partition"]
    if t.num_rows > 1:
        change = pc.or_(pc.not_equal(tp[1:], tp[:-1]), pc.not_equal(pp[1:], pp[:-1]))
        cuts = pc.add(pc.indices_nonzero(pc.fill_null(change, True)), 1).to_pylist()
    else:
        cuts = []
    bounds = [0, *cuts, t.num_rows]
    for a, b in zip(bounds, bounds[1:], strict=False):
        yield tp[a].as_py(), pp[a].as_py(), t.slice(a, b - a)


def anomaly_table(rows: list[dict]) -> pa.Table:
    """Live anomaly rows as Arrow (the schema of :data:`ANOMALY_SCHEMA`)."""
    return pa.Table.from_pylist(rows, ANOMALY_SCHEMA)


#: the anomaly record (verifier.judge.model.ANOMALY_COLUMNS) in Arrow
ANOMALY_SCHEMA = pa.schema([(f.name, f.type) for f in kinds.OUT_SCHEMA if f.name in FIELDS])


def replay(obs: pa.Table, run: str, isolation: str, topics: dict[str, str],
           reader: str = OBSERVER) -> tuple[LiveChecks, list[dict]]:
    """The live checks over recorded rows of one reader at one level, in the order the
    observer met them: each partition in offset order, a row seen again (a naive sink's
    replay) after its first delivery. The self-test's copies, whose rows a mutation added
    at the end of the table with any batch id, are judged so."""
    live = LiveChecks(run, isolation, topics, reader)
    if obs.num_rows == 0:
        return live, []
    return live, live.apply(delivery_order(obs), 0)


def delivery_order(obs: pa.Table) -> pa.Table:
    """Recorded rows in the order the observer met them (:func:`replay`): each partition
    in offset order, a row seen again right after its first delivery."""
    t = obs.append_column("_i", pa.array(range(obs.num_rows), pa.int64()))
    t = t.take(pc.sort_indices(t, [("topic", "ascending"), ("partition", "ascending"),
                                   ("offset", "ascending"), ("_i", "ascending")]))
    return t.drop_columns(["_i"])
