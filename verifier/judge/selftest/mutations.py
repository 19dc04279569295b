"""The mutations: one anomaly (or one legal near miss) injected into a copy of a run.

Each mutation picks its target with the seeded random generator among the run's *clean*
records (read once by every reader at every level where it must be visible, at the
offset its history acknowledged, its identity at one offset only, in a part the drain
completed, and nowhere near an anomaly the run already shows), edits a
:class:`~verifier.judge.selftest.image.RunImage` and says what the checks must report:
a list of :class:`Expect` (kind, place, number of anomaly rows). A near miss expects
nothing. Offsets move everywhere at once (``RunImage.shift``), so a copy stays a run
Kafka could have produced.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.judge.model import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    LOST,
    OBSERVER,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REORDER,
    TORN,
    Drain,
)  # fmt: skip
from verifier.judge.selftest.image import RunImage

TXN = "transactional"


@dataclass(frozen=True)
class Expect:
    """An anomaly the checks must report: ``rows`` rows of ``kind`` in the column of
    ``mode`` at ``isolation`` (None: anomalies without a level), one of them matching
    ``match`` (field -> value; ``reader`` matches one of the row's readers)."""

    kind: str
    mode: str
    isolation: str | None
    rows: int
    match: tuple[tuple[str, object], ...]

    def matches(self, a: dict) -> bool:
        for k, v in self.match:
            if k == "reader":
                if v not in str(a.get("reader") or "").split(","):
                    return False
            elif k == "offset":
                if a.get("offset") != v and v not in (a.get("offsets") or []):
                    return False
            elif a.get(k) != v:
                return False
        return True

    def where(self) -> str:
        m = dict(self.match)
        place = f"{m.get('topic', '?')}-{m['partition']}" if "partition" in m else m.get(
            "topic", "")
        if "offset" in m:
            place += f"@{m['offset']}"
        extra = [f"{k}={m[k]}" for k in ("reader", "pid", "seq", "txn") if k in m]
        iso = f" {self.isolation}" if self.isolation else ""
        return f"{self.kind} {place}{iso} {' '.join(extra)}".strip()


def expect(kind, mode, isolation, rows=1, **match) -> Expect:
    return Expect(kind, mode, isolation, rows, tuple(sorted(match.items())))


@dataclass
class Record:
    """One clean record of the run, where it sits."""

    topic: str
    partition: int
    offset: int
    pid: str
    p: int
    seq: int
    ses: int
    txn: int | None
    ts_send: int | None
    combos: list[tuple[str, str]]  # who read it
    committed: bool = True  # non-transactional, or in a committed transaction


@dataclass
class Mutation:
    name: str
    kind: str  # the injected kind, or "legal"
    place: str
    expects: list[Expect] = field(default_factory=list)

    @property
    def legal(self) -> bool:
        return self.kind == "legal"


class Catalog:
    """What the mutations choose from: the run's clean records and transactions."""

    def __init__(self, img: RunImage, baseline: list[dict], rng: random.Random):
        self.img, self.rng = img, rng
        self.drain = Drain(bool(img.drain.get("completed")), [],
                           list(img.drain.get("behind") or []))  # fmt: skip
        bad_at, bad_ids, bad_txn = set(), set(), set()
        for a in baseline:
            for off in [a.get("offset"), *(a.get("offsets") or [])]:
                if off is not None:
                    bad_at.add((a.get("topic"), a.get("partition"), off))
            if a.get("seq") is not None:
                bad_ids.add((a.get("pid"), a.get("seq")))
            if a.get("txn") is not None:
                bad_txn.add((a.get("pid"), a.get("ses"), a.get("txn")))
            if a.get("kind") == HANGING:
                bad_at.add((a.get("topic"), a.get("partition"), "*"))
        self.txns = self._txns()
        acked = self._acked()
        cells: dict[tuple, dict] = defaultdict(lambda: defaultdict(list))
        where: dict[tuple, set] = defaultdict(set)
        cols = ["topic", "partition", "offset", "pid", "p", "seq", "ses", "txn", "ts_send",
                "foreign"]  # fmt: skip
        for combo, t in img.obs.items():
            for r in t.select(cols).to_pylist():
                cells[(r["topic"], r["partition"], r["offset"])][combo].append(r)
                if not r["foreign"]:
                    where[(r["pid"], r["p"], r["seq"])].add((r["topic"], r["partition"],
                                                             r["offset"]))
        rc = [c for c in img.combos if c[1] == READ_COMMITTED]
        ru = [c for c in img.combos if c[1] == READ_UNCOMMITTED]
        self.records: list[Record] = []
        for (topic, part, off), by in cells.items():
            rows = [r for rs in by.values() for r in rs]
            if any(len(rs) != 1 for rs in by.values()) or any(r["foreign"] for r in rows):
                continue
            r = rows[0]
            ident = (r["pid"], r["p"], r["seq"], r["ses"], r["txn"])
            if any((x["pid"], x["p"], x["seq"], x["ses"], x["txn"]) != ident for x in rows):
                continue
            pid = r["pid"]
            if pid not in img.config["producers"] or (topic, part) != (img.topic_of(pid), r["p"]):
                continue
            if len(where[(pid, r["p"], r["seq"])]) != 1 or (pid, r["seq"]) in bad_ids:
                continue
            if (topic, part, off) in bad_at or (topic, part, "*") in bad_at:
                continue
            if any(self.drain.incomplete(topic, part, c[0], c[1]) for c in img.combos):
                continue
            committed = r["txn"] is None or self.txns.get((pid, r["ses"], r["txn"]), {}).get(
                "committed", False)
            if r["txn"] is not None and (pid, r["ses"], r["txn"]) in bad_txn:
                continue
            if set(by) != set(ru + (rc if committed else [])):
                continue
            if r["txn"] is None and acked.get((pid, r["p"], r["seq"])) != off:
                continue
            if r["txn"] is not None and (pid, r["p"], r["seq"]) not in acked:
                continue
            self.records.append(Record(topic, part, off, pid, r["p"], r["seq"], r["ses"],
                                       r["txn"], r["ts_send"], sorted(by), committed))
        self.records.sort(key=lambda x: (x.topic, x.partition, x.offset))
        self.by_offset = {(x.topic, x.partition, x.offset): x for x in self.records}
        self.cells = cells

    def _acked(self) -> dict[tuple, int | None]:
        out = {}
        for pid, lines in self.img.histories.items():
            for x in lines:
                if x.get("type") == "ok" and x.get("f") == "send":
                    out[(pid, x.get("p"), x.get("seq"))] = x.get("offset")
        return out

    def _txns(self) -> dict[tuple, dict]:
        out: dict[tuple, dict] = {}
        for pid, lines in self.img.histories.items():
            for x in lines:
                if x.get("txn") is None or x.get("type") == "invoke":
                    continue
                t = out.setdefault((pid, x.get("ses"), x["txn"]),
                                   {"committed": False, "records": set()})  # fmt: skip
                if x.get("f") == "commit" and x["type"] == "ok":
                    t["committed"] = True
                if x.get("f") == "send" and x["type"] in ("ok", "info"):
                    t["records"].add((x["p"], x["seq"]))
        return out

    def pick(self, pred: Callable[[Record], bool], prefer: Callable[[Record], bool] | None = None
             ) -> Record | None:  # fmt: skip
        cands = [r for r in self.records if pred(r)]
        if prefer is not None and any(prefer(r) for r in cands):
            cands = [r for r in cands if prefer(r)]
        return self.rng.choice(cands) if cands else None

    def txn_size(self, r: Record) -> int:
        if r.txn is None:
            return 1
        return len(self.txns.get((r.pid, r.ses, r.txn), {}).get("records", ()))

    def txn_clean(self, r: Record) -> bool:
        """Every record of r's transaction is a clean record (fully visible)."""
        if r.txn is None:
            return True
        recs = self.txns.get((r.pid, r.ses, r.txn), {}).get("records", set())
        clean = {(x.p, x.seq) for x in self.records
                 if (x.pid, x.ses, x.txn) == (r.pid, r.ses, r.txn)}  # fmt: skip
        return bool(recs) and recs <= clean


# -- helpers ---------------------------------------------------------------------------


def _strict(img: RunImage, kind: str) -> Callable[[Record], bool]:
    """Prefer records of a mode that forbids ``kind`` (at read_committed): the verdict
    must then change, which tests the table too."""
    from verifier.judge import expectations as X

    def forbids(r: Record) -> bool:
        return X.expectation(img.expect_of(r.pid), READ_COMMITTED, kind) == X.FORBIDDEN
    return forbids


def _plain(r: Record) -> bool:
    return r.txn is None


def _missing(cat: Catalog, r: Record, combos) -> list[Expect]:
    """What a must-see record gone for ``combos`` shows: lost (one row per level, every
    reader that misses it) and, in a committed transaction of 2+ records, torn for each
    reader that still sees the rest."""
    mode, out = cat.img.mode_of(r.pid), []
    for iso in sorted({c[1] for c in combos}):
        who = [c[0] for c in combos if c[1] == iso]
        out.append(expect(LOST, mode, iso, 1, topic=r.topic, partition=r.partition,
                          pid=r.pid, seq=r.seq, reader=who[0]))  # fmt: skip
    if r.txn is not None and cat.txn_size(r) >= 2:
        for reader, iso in combos:
            out.append(expect(TORN, mode, iso, 1, pid=r.pid, txn=r.txn, reader=reader))
    return out


def _copy_rows(img: RunImage, r: Record, **over) -> dict:
    return {c: [{**row, **over} for row in img.rows(c, r.topic, r.partition, r.offset)]
            for c in r.combos}


def _history(img: RunImage, pid: str, *lines: dict) -> None:
    t = img.clock(pid)
    for i, x in enumerate(lines):
        img.histories[pid].append({**x, "t": t + i})


def _send(typ: str, ses: int, p: int, seq: int, txn, offset=None) -> dict:
    x = {"type": typ, "f": "send", "ses": ses, "p": p, "seq": seq, "txn": txn}
    if typ == "ok":
        x["offset"] = offset
    elif typ != "invoke":
        x["error"] = "selftest: injected"
    return x


def _txn_op(typ: str, f: str, ses: int, txn: int, abort=None) -> dict:
    x = {"type": typ, "f": f, "ses": ses, "txn": txn}
    if f == "begin":
        x["abort"] = bool(abort)
    return x


def _session(ses: int) -> dict:
    return {"type": "session", "ses": ses, "config": {"selftest": True}, "os_pid": 0}


# -- the anomalies ---------------------------------------------------------------------


def lost(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: x.committed and cat.txn_clean(x),
                 lambda x: _plain(x) and _strict(img, LOST)(x))  # fmt: skip
    if r is None:
        return None
    for c in r.combos:
        img.drop(c, r.topic, r.partition, r.offset)
    return Mutation("lost", LOST, f"{r.topic}-{r.partition}@{r.offset}",
                    _missing(cat, r, r.combos))


def duplicate_same(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: x.committed, _strict(img, DUP_SAME))
    if r is None:
        return None
    rows = _copy_rows(img, r)
    img.shift(r.topic, r.partition, r.offset + 1)
    for c, rs in rows.items():
        img.add(c, [{**x, "offset": r.offset + 1} for x in rs])
    mode = img.mode_of(r.pid)
    return Mutation("duplicate-same-session", DUP_SAME, f"{r.topic}-{r.partition}@{r.offset + 1}",
                    [expect(DUP_SAME, mode, iso, 1, topic=r.topic, partition=r.partition,
                            offset=r.offset + 1, seq=r.seq)
                     for iso in sorted({c[1] for c in r.combos})])  # fmt: skip


def duplicate_cross(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: x.committed, _strict(img, DUP_CROSS))
    if r is None:
        return None
    ses, off = img.last_session(r.pid) + 1, img.end(r.topic, r.partition)
    rows = _copy_rows(img, r, ses=ses, offset=off, ts_send=(r.ts_send or 0) + 1)
    lines = [_session(ses)]
    if r.txn is not None:
        lines += [_txn_op("invoke", "begin", ses, r.txn, False),
                  _txn_op("ok", "begin", ses, r.txn, False)]
    lines += [_send("invoke", ses, r.p, r.seq, r.txn), _send("ok", ses, r.p, r.seq, r.txn, off)]
    if r.txn is not None:
        lines += [_txn_op("invoke", "commit", ses, r.txn), _txn_op("ok", "commit", ses, r.txn)]
    _history(img, r.pid, *lines)
    for c, rs in rows.items():
        img.add(c, rs)
    img.grow(r.topic, r.partition, 1 if r.txn is None else 2)
    mode = img.mode_of(r.pid)
    return Mutation("duplicate-cross-session", DUP_CROSS, f"{r.topic}-{r.partition}@{off}",
                    [expect(DUP_CROSS, mode, iso, 1, topic=r.topic, partition=r.partition,
                            offset=off, seq=r.seq)
                     for iso in sorted({c[1] for c in r.combos})])  # fmt: skip


def duplicate_delivery(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: any(c[0] == OBSERVER for c in x.combos))
    if r is None:
        return None
    c = next(c for c in r.combos if c[0] == OBSERVER)
    img.add(c, img.rows(c, r.topic, r.partition, r.offset))
    return Mutation("duplicate-delivery", DUP_DELIVERY, f"{r.topic}-{r.partition}@{r.offset}",
                    [expect(DUP_DELIVERY, img.mode_of(r.pid), c[1], 1, topic=r.topic,
                            partition=r.partition, offset=r.offset, reader=c[0])])  # fmt: skip


def reorder(img: RunImage, cat: Catalog) -> Mutation | None:
    import bisect

    offsets: dict[tuple, list[int]] = defaultdict(list)
    for t, p, o in cat.cells:
        offsets[(t, p)].append(o)
    for v in offsets.values():
        v.sort()
    pairs = []
    for a in cat.records:
        offs = offsets[(a.topic, a.partition)]
        i = bisect.bisect_right(offs, a.offset)
        if i >= len(offs):
            continue
        b = cat.by_offset.get((a.topic, a.partition, offs[i]))
        if (b is not None and (b.pid, b.ses, b.txn, b.combos) == (a.pid, a.ses, a.txn, a.combos)
                and a.seq < b.seq and a.committed):
            pairs.append((a, b))
    strict = _strict(img, REORDER)
    if any(strict(a) for a, _ in pairs):
        pairs = [x for x in pairs if strict(x[0])]
    if not pairs:
        return None
    a, b = cat.rng.choice(pairs)
    ra, rb = _copy_rows(img, a, offset=b.offset), _copy_rows(img, b, offset=a.offset)
    for c in a.combos:
        img.drop(c, a.topic, a.partition, a.offset)
        img.drop(c, b.topic, b.partition, b.offset)
        img.add(c, ra[c] + rb[c])
    for x in img.histories[a.pid]:
        if x.get("type") == "ok" and x.get("f") == "send" and x.get("p") == a.p:
            if x.get("seq") == a.seq:
                x["offset"] = b.offset
            elif x.get("seq") == b.seq:
                x["offset"] = a.offset
    mode = img.mode_of(a.pid)
    return Mutation("reorder", REORDER, f"{a.topic}-{a.partition}@{a.offset}<->{b.offset}",
                    [expect(REORDER, mode, iso, 1, topic=a.topic, partition=a.partition,
                            offset=b.offset, seq=a.seq)
                     for iso in sorted({c[1] for c in a.combos})])  # fmt: skip


def _txn_pid(img: RunImage, cat: Catalog) -> str | None:
    pids = sorted(p for p in img.config["producers"] if img.expect_of(p) == TXN
                  and p in img.histories)  # fmt: skip
    return cat.rng.choice(pids) if pids else None


def _new_txn_record(img: RunImage, cat: Catalog, pid: str, end: str | None, abort: bool,
                    combos) -> tuple[str, int, int, int, int, int]:  # fmt: skip
    """A new one-record transaction at the end of one of pid's partitions: history lines
    (``end`` = "commit", "abort" or None: left open) and rows for ``combos``."""
    topic = img.topic_of(pid)
    part = cat.rng.choice(img.partitions(topic) or [0])
    ses, txn, seq = img.last_session(pid), img.next_txn(pid), img.next_seq(pid, part)
    off = img.end(topic, part)
    lines = [_txn_op("invoke", "begin", ses, txn, abort), _txn_op("ok", "begin", ses, txn, abort),
             _send("invoke", ses, part, seq, txn), _send("ok", ses, part, seq, txn, off)]
    if end:
        lines += [_txn_op("invoke", end, ses, txn), _txn_op("ok", end, ses, txn)]
    _history(img, pid, *lines)
    ts = img.clock(pid)
    for c in combos:
        img.add(c, [img.row_like(c, topic=topic, partition=part, offset=off, pid=pid, ses=ses,
                                 p=part, seq=seq, txn=txn, abort=abort, ts_send=ts,
                                 ts_broker=ts + 1, observed_at=ts + 2)])  # fmt: skip
    return topic, part, off, ses, txn, seq


def aborted_read(img: RunImage, cat: Catalog) -> Mutation | None:
    pid = _txn_pid(img, cat)
    if pid is None:
        return None
    topic, part, off, _, txn, _ = _new_txn_record(img, cat, pid, "abort", True, img.combos)
    img.grow(topic, part, 2)
    mode = img.mode_of(pid)
    return Mutation("aborted-read", ABORTED_READ, f"{topic}-{part}@{off} read_committed",
                    [expect(ABORTED_READ, mode, iso, 1, topic=topic, partition=part, offset=off)
                     for iso in sorted({c[1] for c in img.combos})])  # fmt: skip


def torn(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: x.txn is not None and x.committed and cat.txn_size(x) >= 2
                 and cat.txn_clean(x))  # fmt: skip
    if r is None:
        return None
    rc = [c for c in r.combos if c[1] == READ_COMMITTED]
    for c in rc:
        img.drop(c, r.topic, r.partition, r.offset)
    return Mutation("torn-transaction", TORN,
                    f"{r.topic}-{r.partition}@{r.offset} txn {r.txn} read_committed",
                    _missing(cat, r, rc))


def hanging(img: RunImage, cat: Catalog) -> Mutation | None:
    pid = _txn_pid(img, cat)
    if pid is None:
        return None
    ru = [c for c in img.combos if c[1] == READ_UNCOMMITTED]
    topic, part, off, *_ = _new_txn_record(img, cat, pid, None, False, ru)
    img.grow(topic, part, 1, (READ_UNCOMMITTED,))  # the LSO stays at the open record
    mode = img.mode_of(pid)
    return Mutation("hanging-transaction", HANGING, f"{topic}-{part}@{off}",
                    [expect(HANGING, mode, None, 1, topic=topic, partition=part),
                     expect(ABORTED_READ, mode, READ_UNCOMMITTED, 1, topic=topic, partition=part,
                            offset=off)])  # fmt: skip


def inconsistent(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: x.committed and len(x.combos) >= 2 and cat.txn_clean(x),
                 lambda x: _plain(x))  # fmt: skip
    if r is None:
        return None
    c = ("plain", READ_COMMITTED) if ("plain", READ_COMMITTED) in r.combos else r.combos[-1]
    img.drop(c, r.topic, r.partition, r.offset)
    img.add(c, [img.row_like(c, topic=r.topic, partition=r.partition, offset=r.offset, run=None,
                             abort=None, foreign=True,
                             error="not a format 1 record: injected by selftest")])  # fmt: skip
    mode = img.mode_of(r.pid)
    out = [expect(INCONSISTENT, mode, None, 1, topic=r.topic, partition=r.partition,
                  offset=r.offset),
           expect(FOREIGN, mode, c[1], 1, topic=r.topic, partition=r.partition, offset=r.offset,
                  reader=c[0])]  # fmt: skip
    return Mutation("inconsistent-offset", INCONSISTENT,
                    f"{r.topic}-{r.partition}@{r.offset} {c[0]}/{c[1]}",
                    out + _missing(cat, r, [c]))


def foreign(img: RunImage, cat: Catalog) -> Mutation | None:
    def elsewhere(x: Record) -> list[tuple[str, int]]:
        same = [(x.topic, q) for q in img.partitions(x.topic) if q != x.partition]
        return same or [(img.topic_of(p), 0) for p in img.config["producers"]
                        if img.topic_of(p) != x.topic]  # fmt: skip

    r = cat.pick(lambda x: x.committed and cat.txn_clean(x) and bool(elsewhere(x)),
                 lambda x: _plain(x))  # fmt: skip
    if r is None:
        return None
    topic, part = cat.rng.choice(elsewhere(r))
    off = img.end(topic, part)
    rows = _copy_rows(img, r, topic=topic, partition=part, offset=off)
    for c in r.combos:
        img.drop(c, r.topic, r.partition, r.offset)
        img.add(c, rows[c])
    img.grow(topic, part, 1)
    mode = img.mode_of(r.pid)
    out = [expect(FOREIGN, mode, iso, sum(1 for c in r.combos if c[1] == iso), topic=topic,
                  partition=part, offset=off, pid=r.pid, seq=r.seq)
           for iso in sorted({c[1] for c in r.combos})]  # fmt: skip
    return Mutation("foreign-record", FOREIGN, f"{topic}-{part}@{off} (home {r.topic}-{r.p})",
                    out + _missing(cat, r, r.combos))


# -- legal near misses -----------------------------------------------------------------


def _any_pid(img: RunImage, cat: Catalog, plain_first=True) -> str | None:
    pids = sorted(p for p in img.config["producers"] if p in img.histories)
    plain = [p for p in pids if img.expect_of(p) != TXN]
    pool = plain if plain_first and plain else pids
    return cat.rng.choice(pool) if pool else None


def info_never_written(img: RunImage, cat: Catalog) -> Mutation | None:
    pid = _any_pid(img, cat)
    if pid is None:
        return None
    topic = img.topic_of(pid)
    part = cat.rng.choice(img.partitions(topic) or [0])
    ses, seq = img.last_session(pid), img.next_seq(pid, part)
    if img.expect_of(pid) == TXN:
        txn = img.next_txn(pid)
        _history(img, pid, _txn_op("invoke", "begin", ses, txn, False),
                 _txn_op("ok", "begin", ses, txn, False), _send("invoke", ses, part, seq, txn),
                 _send("info", ses, part, seq, txn), _txn_op("invoke", "abort", ses, txn),
                 _txn_op("ok", "abort", ses, txn))  # fmt: skip
    else:
        _history(img, pid, _send("invoke", ses, part, seq, None),
                 _send("info", ses, part, seq, None))  # fmt: skip
    return Mutation("info-send-never-written", "legal", f"{pid} {topic}-{part} seq {seq}")


def marker_gap(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: True)
    if r is None:
        return None
    img.shift(r.topic, r.partition, r.offset, 1)
    return Mutation("marker-gap", "legal", f"{r.topic}-{r.partition}@{r.offset}")


def resend_after_restart(img: RunImage, cat: Catalog) -> Mutation | None:
    pid = _any_pid(img, cat)
    if pid is None:
        return None
    topic = img.topic_of(pid)
    part = cat.rng.choice(img.partitions(topic) or [0])
    ses, seq, off = img.last_session(pid), img.next_seq(pid, part), img.end(topic, part)
    txn = img.next_txn(pid) if img.expect_of(pid) == TXN else None
    lines = []
    if txn is not None:
        lines += [_txn_op("invoke", "begin", ses, txn, False), _txn_op("ok", "begin", ses, txn)]
    lines += [_send("invoke", ses, part, seq, txn), _session(ses + 1)]  # died mid-send
    if txn is not None:
        lines += [_txn_op("invoke", "begin", ses + 1, txn, False),
                  _txn_op("ok", "begin", ses + 1, txn, False)]
    lines += [_send("invoke", ses + 1, part, seq, txn), _send("ok", ses + 1, part, seq, txn, off)]
    if txn is not None:
        lines += [_txn_op("invoke", "commit", ses + 1, txn),
                  _txn_op("ok", "commit", ses + 1, txn)]
    _history(img, pid, *lines)
    ts = img.clock(pid)
    for c in img.combos:
        img.add(c, [img.row_like(c, topic=topic, partition=part, offset=off, pid=pid,
                                 ses=ses + 1, p=part, seq=seq, txn=txn, ts_send=ts,
                                 ts_broker=ts + 1, observed_at=ts + 2)])  # fmt: skip
    img.grow(topic, part, 1 if txn is None else 2)
    return Mutation("resend-after-restart", "legal", f"{topic}-{part}@{off} {pid} seq {seq}")


def interleaved_producers(img: RunImage, cat: Catalog) -> Mutation | None:
    r = cat.pick(lambda x: _plain(x), lambda x: _strict(img, REORDER)(x))
    if r is None:
        return None
    spec = img.config["producers"][r.pid]
    pid = f"{r.pid}-selftest"
    topic, part = r.topic, r.partition
    offs = sorted(x.offset for x in cat.records if (x.topic, x.partition) == (topic, part))
    chosen = sorted(cat.rng.sample(offs, min(3, len(offs))))
    img.config["producers"][pid] = {"mode": spec["mode"], "expect": img.expect_of(r.pid),
                                    "topic": topic}  # fmt: skip
    t0 = img.clock(r.pid)
    img.histories[pid] = [
        {"type": "header", "format": "producer-history", "version": 1, "run": img.config["run"],
         "pid": pid, "mode": spec["mode"], "topic": topic, "partitions": img.partitions(topic)},
        {**_session(1), "t": t0}]  # fmt: skip
    for i, o in enumerate(chosen):
        at = o + i + 1  # after the chosen record (moved by the earlier inserts)
        img.shift(topic, part, at, 1)
        _history(img, pid, _send("invoke", 1, part, i, None), _send("ok", 1, part, i, None, at))
        for c in img.combos:
            img.add(c, [img.row_like(c, topic=topic, partition=part, offset=at, pid=pid, ses=1,
                                     p=part, seq=i, ts_send=t0 + i, ts_broker=t0 + i,
                                     observed_at=t0 + i)])  # fmt: skip
    return Mutation("interleaved-producers", "legal",
                    f"{topic}-{part}: {pid} between {r.pid}'s records")


#: every mutation, in table order: the anomalies first, then the near misses
MUTATIONS: tuple[Callable[[RunImage, Catalog], Mutation | None], ...] = (
    lost, duplicate_same, duplicate_cross, duplicate_delivery, reorder, aborted_read, torn,
    hanging, inconsistent, foreign, info_never_written, marker_gap, resend_after_restart,
    interleaved_producers,
)
