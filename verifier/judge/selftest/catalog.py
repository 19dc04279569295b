"""What a mutation is and what it picks from: the expected anomaly (:class:`Expect`), one
observed record (:class:`Record`), the result of a mutation (:class:`Mutation`), the
run's clean records (:class:`Catalog`), and the small history and row builders the
mutations share (:mod:`verifier.judge.selftest.mutations`)."""

from __future__ import annotations

import copy
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from verifier.judge.model import (
    HANGING,
    LOST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
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
        return bool(recs) and recs <= self._clean.get((r.pid, r.ses, r.txn), set())

    @cached_property
    def _clean(self) -> dict[tuple, set]:
        """Per transaction (pid, ses, txn): its clean records' (p, seq), built once (asked
        per candidate record, it was a pass over every record each time)."""
        out: dict[tuple, set] = defaultdict(set)
        for x in self.records:
            if x.txn is not None:
                out[(x.pid, x.ses, x.txn)].add((x.p, x.seq))
        return out

    def bound(self, img: RunImage, rng: random.Random) -> Catalog:
        """This catalogue for a clone of its image (the same content before a mutation
        edits it) with its own random choices: the run's records are indexed once."""
        other = copy.copy(self)
        other.img, other.rng = img, rng
        return other


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
