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

from collections import defaultdict
from collections.abc import Callable

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
)  # fmt: skip
from verifier.judge.selftest.catalog import (  # noqa: F401 - Catalog, Expect, expect: re-exported
    TXN,
    Catalog,
    Expect,
    Mutation,
    Record,
    _copy_rows,
    _history,
    _missing,
    _plain,
    _send,
    _session,
    _strict,
    _txn_op,
    expect,
)
from verifier.judge.selftest.image import RunImage


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
    """Undecodable bytes for one reader at a record's offset: the plain reader at
    read_committed where it read the record (the batch pass compares every reader)."""
    return _inconsistent(img, cat, ("plain", READ_COMMITTED), "inconsistent-offset")


def inconsistent_observer(img: RunImage, cat: Catalog) -> Mutation | None:
    """The same at the Spark observer's read_uncommitted level: its two levels differ, so
    the live path's offset comparison must find it too (and the live foreign and lost)."""
    return _inconsistent(img, cat, (OBSERVER, READ_UNCOMMITTED),
                         "inconsistent-offset-observer", strict=True)


def _inconsistent(img: RunImage, cat: Catalog, want: tuple[str, str], name: str,
                  strict: bool = False) -> Mutation | None:
    r = cat.pick(lambda x: x.committed and len(x.combos) >= 2 and cat.txn_clean(x)
                 and (not strict or want in x.combos),
                 lambda x: _plain(x))  # fmt: skip
    if r is None:
        return None
    c = want if want in r.combos else r.combos[-1]
    img.drop(c, r.topic, r.partition, r.offset)
    img.add(c, [img.row_like(c, topic=r.topic, partition=r.partition, offset=r.offset, run=None,
                             abort=None, foreign=True,
                             error="not a format 1 record: injected by selftest")])  # fmt: skip
    mode = img.mode_of(r.pid)
    out = [expect(INCONSISTENT, mode, None, 1, topic=r.topic, partition=r.partition,
                  offset=r.offset),
           expect(FOREIGN, mode, c[1], 1, topic=r.topic, partition=r.partition, offset=r.offset,
                  reader=c[0])]  # fmt: skip
    return Mutation(name, INCONSISTENT,
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
    hanging, inconsistent, inconsistent_observer, foreign, info_never_written, marker_gap,
    resend_after_restart, interleaved_producers,
)
