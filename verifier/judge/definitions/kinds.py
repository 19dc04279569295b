"""Anomaly rows of one (topic, partition), from :mod:`verifier.judge.definitions.frames`.

Filters run in Arrow; only rows that are anomalies become Python dicts, so a clean
partition costs no Python per record. Each function mirrors one check's definition
(docs/expectations.md §1). Output rows have :data:`OUT_SCHEMA`: ``rec`` = ``a`` for an
anomaly, ``v`` for a transaction's visible records per reader (the torn-transaction
check sums them over partitions), ``c`` for per-producer counts.
"""

from __future__ import annotations

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.definitions import frames as K
from verifier.judge.definitions.rules import duplicate_kinds, reordered
from verifier.judge.model import (
    ABORTED_READ,
    DUP_DELIVERY,
    FOREIGN,
    INCONSISTENT,
    ISOLATIONS,
    LOST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REORDER,
    UNSEEN,
)  # fmt: skip

#: outcomes under which a transaction's records must never be visible at read_committed
NOT_COMMITTED = ("aborted", "open")

OUT_SCHEMA = pa.schema([
    ("rec", pa.string()), ("kind", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("isolation", pa.string()), ("reader", pa.string()),
    ("pid", pa.string()), ("ses", pa.int32()), ("seq", pa.int64()), ("txn", pa.int64()),
    ("offset", pa.int64()), ("offsets", pa.list_(pa.int64())), ("t", pa.int64()),
    ("evidence", pa.string()), ("n", pa.list_(pa.int64())),
])  # fmt: skip
OUT_DDL = ", ".join(f"`{f.name}` {t}" for f, t in zip(OUT_SCHEMA, [
    "string", "string", "string", "int", "string", "string", "string", "int", "bigint",
    "bigint", "bigint", "array<bigint>", "bigint", "string", "array<bigint>"], strict=True))


def _ev(**kw) -> str:
    """Evidence as JSON without null fields (as Spark's to_json wrote it)."""
    return orjson.dumps({k: ({a: b for a, b in v.items() if b is not None}
                             if isinstance(v, dict) else v)
                         for k, v in kw.items() if v is not None}).decode()  # fmt: skip


def run_pass(ctx: K.Ctx, topic: str, part: int, obs: pa.Table, sends: pa.Table) -> pa.Table:
    """Everything the checks report about one partition, as :data:`OUT_SCHEMA` rows.

    ``obs``: the observation rows read in (topic, part); ``sends``: the identities whose
    home is (topic, part). Every anomaly is placed where its record was read (topic,
    partition, offset, reader, isolation) and names the identity as evidence; a missing
    record (lost, unseen) is placed at its home, at the offset its send was acknowledged.
    """
    out: list[dict] = []
    at = {"topic": topic, "partition": part}
    cells, exact = K.cells(obs, ctx)
    pl = K.placements(obs, ctx)
    home = K.at_home(pl, ctx, topic, part)
    here, away = pl.filter(home), pl.filter(pc.invert(home))
    sent = K.sent_mask(here, sends)
    known, unknown = here.filter(sent), here.filter(pc.invert(sent))
    ids = K.ids(known, ctx)
    ident = K.ident(ids, sends)
    out += delivery_and_inconsistent(cells, exact, ctx, at, obs)
    out += duplicates(ids, known, ctx, at) + reorder(ids, known, ctx, at)
    out += lost(ident, ctx, at)
    out += misplaced(unknown, ctx, at, "identity in no producer history")
    out += misplaced(away, ctx, at, "identity names another partition")
    out += aborted(known, ctx, at) + txn_visible(known, ctx, at)
    out += counts(ident, at)
    return pa.Table.from_pylist(out, OUT_SCHEMA)


def _names(ctx: K.Ctx) -> list[str]:
    return [f"{r}/{i}" for r, i in ctx.combos]


def delivery_and_inconsistent(c, exact, ctx: K.Ctx, at: dict, obs: pa.Table) -> list[dict]:
    """duplicate-delivery (a reader got one offset twice) and inconsistent-offset."""
    out = []
    idf = ["pid", "ses", "seq", "txn", "offset", "ts_send"]
    for k, (reader, iso) in enumerate(ctx.combos):
        for r in c.filter(pc.greater(c[f"n{k}"], 1)).select([*idf, f"n{k}"]).to_pylist():
            out.append({**at, "rec": "a", "kind": DUP_DELIVERY, "isolation": iso,
                        "reader": reader, "pid": r["pid"], "ses": r["ses"], "seq": r["seq"],
                        "txn": r["txn"], "offset": r["offset"], "offsets": [r["offset"]],
                        "t": r["ts_send"], "evidence": _ev(deliveries=r[f"n{k}"])})  # fmt: skip
    bad = pc.or_(c["differ"], pc.and_(pc.equal(c["fany"], 1), pc.greater(c["ndec"], 0)))
    rows = c.filter(bad).to_pylist()
    seen = _seen_at(obs, ctx, [r["offset"] for r in rows]) if rows else {}
    for r in rows:
        one = {f: r[f] for f in K.IDENT_FIELDS}
        one, other = exact.get(r["offset"], (one, one))
        out.append({**at, "rec": "a", "kind": INCONSISTENT, "pid": one["pid"],
                    "seq": one["seq"], "offset": r["offset"], "offsets": [r["offset"]],
                    "t": one["ts_send"],
                    "evidence": _ev(one=one, other=other, foreign_seen=r["fany"] == 1,
                                    seen=seen.get(r["offset"]))})  # fmt: skip
    return out


def _seen_at(obs: pa.Table, ctx: K.Ctx, offsets: list[int]) -> dict[int, dict[str, str]]:
    """{offset: {"reader/isolation": "pid:p:seq ses S txn T sent MS" or "undecodable"}}
    (the send time too: it is part of the identity two readers are compared on)."""
    names = _names(ctx)
    rows = obs.filter(pc.is_in(obs["offset"], pa.array(offsets, pa.int64()))).to_pylist()
    out: dict[int, dict[str, str]] = {}
    for r in rows:
        what = ("undecodable" if r["fgn"] else
                f"{r['pid']}:{r['p']}:{r['seq']} ses {r['ses']} txn {r['txn']} "
                f"sent {r['ts_send']}")  # fmt: skip
        d = out.setdefault(r["offset"], {})
        name = names[r["ci"]] if r["ci"] is not None else "?"
        d[name] = what if name not in d or d[name] == what else d[name] + " | " + what
    return out


def _who(pl: pa.Table, ctx: K.Ctx, iso: str, keys: set[tuple]) -> dict[tuple, dict]:
    """{(pid, p, seq): {offset: [readers that decoded it there at iso]}} for ``keys``."""
    if not keys:
        return {}
    seqs = pa.array(sorted({k[2] for k in keys}), pa.int64())
    out: dict[tuple, dict] = {}
    for r in pl.filter(pc.is_in(pl["seq"], seqs)).to_pylist():
        key = (r["pid"], r["p"], r["seq"])
        if key in keys:
            who = [ctx.combos[k][0] for k in ctx.iso_combos[iso] if r[f"d{k}"] > 0]
            if who:
                out.setdefault(key, {})[r["offset"]] = who
    return out


def duplicates(ids: pa.Table, pl: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """One identity at >= 2 offsets: same session (copies > sessions), cross (>= 2).
    Reader: the readers at that level that delivered two or more of the copies (else
    every reader that delivered one)."""
    out = []
    for iso in ISOLATIONS:
        cp = f"copies_{iso}"
        rows = ids.filter(pc.fill_null(pc.greater_equal(ids[cp], 2), False)).to_pylist()
        who = _who(pl, ctx, iso, {(r["pid"], r["p"], r["seq"]) for r in rows})
        for r in rows:
            copies, sessions = r[cp], r[f"sessions_{iso}"]
            first, last = r[f"first_{iso}"], r[f"last_{iso}"]
            by_off = who.get((r["pid"], r["p"], r["seq"]), {})
            readers = sorted({x for v in by_off.values() for x in v})
            twice = [x for x in readers if sum(x in v for v in by_off.values()) >= 2]
            row = {**at, "rec": "a", "isolation": iso, "reader": ",".join(twice or readers),
                   "pid": r["pid"], "ses": r[f"fses_{iso}"],
                   "seq": r["seq"], "offset": first, "offsets": sorted(by_off) or [first, last],
                   "t": r["t"],
                   "evidence": _ev(copies=copies, sessions=sessions, first_offset=first,
                                   last_offset=last)}  # fmt: skip
            out += [{**row, "kind": kind} for kind in duplicate_kinds(copies, sessions)]
    return out


def reorder(ids: pa.Table, pl: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """First copies of one session: a sequence lower than one at a lower offset. Only
    identities at home here (one producer, this partition); reader: who read it there."""
    out = []
    for iso in ISOLATIONS:
        f = ids.filter(pc.is_valid(ids[f"first_{iso}"]))
        f = f.select(["pid", "p", f"fses_{iso}", f"first_{iso}", "seq", "t"])
        f = f.rename_columns(["pid", "p", "ses", "offset", "seq", "t"])
        f = f.sort_by([("pid", "ascending"), ("ses", "ascending"), ("offset", "ascending")])
        if f.num_rows < 2 or not _maybe_reordered(f):
            continue
        best, key, found = None, None, []
        for r in f.to_pylist():
            if (r["pid"], r["ses"]) != key:
                best, key = None, (r["pid"], r["ses"])
            if best and reordered(r["seq"], best[0]):
                found.append((r, best))
            cur = (r["seq"], r["offset"])
            best = cur if best is None or K._spark_key2(cur) > K._spark_key2(best) else best
        who = _who(pl, ctx, iso, {(r["pid"], r["p"], r["seq"]) for r, _ in found})
        for r, best in found:
            readers = who.get((r["pid"], r["p"], r["seq"]), {}).get(r["offset"], [])
            out.append({**at, "rec": "a", "kind": REORDER, "isolation": iso,
                        "reader": ",".join(readers) or None,
                        "pid": r["pid"], "ses": r["ses"], "seq": r["seq"],
                        "offset": r["offset"], "offsets": [best[1], r["offset"]], "t": r["t"],
                        "evidence": _ev(higher_seq=best[0],
                                        higher_seq_offset=best[1])})  # fmt: skip
    return out


def _maybe_reordered(f: pa.Table) -> bool:
    """Cheap filter: any row whose seq is below its predecessor's in the sorted order
    (a reorder implies one somewhere; sessions change there too, a false alarm only)."""
    seq = pc.fill_null(f["seq"], 0).combine_chunks()
    return pc.any(pc.less(seq[1:], seq[:-1])).as_py() or False


def lost(i: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """Must-see identities some reader at some level did not deliver (unseen where that
    reader's part is incomplete). Placed at home, at the offset its send was
    acknowledged (if one was). A send acknowledged below the partition's log start
    offset after the drain (``Drain.deleted``: retention deleted it) is none: the log no
    longer holds it, which is neither its producer's fault nor a reader's."""
    i = i.filter(pc.fill_null(i["must_see"], False))
    nc = len(ctx.combos)
    seen = [pc.fill_null(i[f"s{k}"], False) for k in range(nc)]
    isos = sorted({iso for _, iso in ctx.combos})
    absent = K._any([pc.invert(seen[k]) for iso in isos for k in ctx.iso_combos[iso]])
    out = []
    names = [_combo_col(r, iso) for r, iso in ctx.combos]
    # sends come to their home partition: this one (at), so completeness is per reader
    late = ctx.late(at["topic"], at["partition"])
    for r in i.append_column("absent", absent).filter(absent).to_pylist():
        flags = [bool(r[f"s{k}"]) for k in range(nc)]
        seen_by = ",".join(n for n, s in zip(names, flags, strict=True) if s)
        ev = _ev(in_log=any(flags), seen_by=seen_by, acknowledged=r["ok"],
                 transactional=r["transactional"], acked_offset=r["acked_offset"])  # fmt: skip
        off = r["acked_offset"]
        if ctx.drain.deleted(at["topic"], r["p"], off):
            continue  # retention deleted it: no reader could deliver it, no producer lost it
        for iso in isos:
            missing = [k for k in ctx.iso_combos[iso] if not flags[k]]
            for kind, who in ((LOST, [k for k in missing if not late[k]]),
                              (UNSEEN, [k for k in missing if late[k]])):  # fmt: skip
                if who:
                    out.append({**at, "rec": "a", "kind": kind, "partition": r["p"],
                                "isolation": iso,
                                "reader": ",".join(ctx.combos[k][0] for k in who),
                                "pid": r["pid"], "seq": r["seq"], "t": r["t_send"],
                                "offset": off, "offsets": None if off is None else [off],
                                "evidence": ev})  # fmt: skip
    return out


def _combo_col(reader: str, isolation: str) -> str:
    return "n_" + (reader + "_" + isolation).replace("-", "_").replace(".", "_")


def misplaced(pl: pa.Table, ctx: K.Ctx, at: dict, error: str) -> list[dict]:
    """Decoded records of this run's producers that do not belong here: an identity no
    history sent, or one that names another (topic, partition). One foreign-record per
    (offset, reader, isolation) that read it, placed where it was read; the identity it
    names (and its home) is the evidence. Such a record takes part in no other check
    here; at its home it is missing (lost, if it had to be visible)."""
    out = []
    for r in pl.to_pylist():
        home = {"topic": ctx.topics.get(r["pid"]), "partition": r["p"]}
        ev = _ev(error=error, names={f: r[f] for f in ("pid", "p", "seq", "ses", "txn")},
                 home=home)  # fmt: skip
        for k, (reader, iso) in enumerate(ctx.combos):
            if r[f"d{k}"] > 0:
                out.append({**at, "rec": "a", "kind": FOREIGN, "isolation": iso,
                            "reader": reader, "pid": r["pid"], "ses": r["ses"],
                            "seq": r["seq"], "txn": r["txn"], "offset": r["offset"],
                            "offsets": [r["offset"]], "t": r["ts_send"],
                            "evidence": ev})  # fmt: skip
    return out


def _txn_cells(c: pa.Table, ctx: K.Ctx) -> pa.Table:
    c = c.filter(pc.is_valid(c["txn"]))
    return c.join(ctx.status.select(["pid", "ses", "txn", "status", "abort_intent"]),
                  ["pid", "ses", "txn"], join_type="left outer")  # fmt: skip


def aborted(c: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """Records of a transaction that did not commit, delivered (reported at both levels):
    meant to abort (the record's ``abort``: an aborted attempt of a number a later
    attempt committed is no copy of the committed records), or of a transaction the
    history does not show committed (a session killed inside it, a failed commit)."""
    t = _txn_cells(c, ctx)
    t = t.filter(pc.or_(pc.is_in(pc.fill_null(t["status"], "open"), pa.array(NOT_COMMITTED)),
                        pc.fill_null(t["abort"], False)))
    out = []
    for r in t.to_pylist():
        status = r["status"] or "open"
        for iso in sorted({iso for _, iso in ctx.combos}):
            who = [ctx.combos[k][0] for k in ctx.iso_combos[iso] if r[f"d{k}"] > 0]
            if who:
                out.append({**at, "rec": "a", "kind": ABORTED_READ, "isolation": iso,
                            "reader": ",".join(who), "pid": r["pid"], "ses": r["ses"],
                            "seq": r["seq"], "txn": r["txn"], "offset": r["offset"],
                            "offsets": [r["offset"]], "t": r["ts_send"],
                            "evidence": _ev(txn_status=status,
                                            abort_intent=True if r["abort"] else
                                            r["abort_intent"])})  # fmt: skip
    return out


def txn_visible(c: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """Per transaction: distinct records each (reader, isolation) saw in this partition."""
    t = c.filter(pc.is_valid(c["txn"]))
    if t.num_rows == 0:
        return []
    nc = len(ctx.combos)
    keys = ["pid", "ses", "txn", "p", "seq"]
    per = t.group_by(keys).aggregate([(f"d{k}", "max") for k in range(nc)])
    per = pa.table({**{k: per[k] for k in keys[:3]},
                    **{f"v{k}": K._int(pc.greater(per[f"d{k}_max"], 0)) for k in range(nc)}})
    v = per.group_by(keys[:3]).aggregate([(f"v{k}", "sum") for k in range(nc)])
    return [{**at, "rec": "v", "partition": None, "pid": r["pid"], "ses": r["ses"],
             "txn": r["txn"], "n": [r[f"v{k}_sum"] for k in range(nc)]}
            for r in v.to_pylist()]  # fmt: skip


def counts(i: pa.Table, at: dict) -> list[dict]:
    """Per producer: sent, acknowledged, indeterminate, failed, committed, observed_rc,
    observed_ru, observed (summed over partitions by the stats)."""
    i = i.filter(pc.fill_null(i["sent"], False))
    if i.num_rows == 0:
        return []
    ok, info = i["ok"], i["info"]
    rc = pc.greater(pc.fill_null(i[f"copies_{READ_COMMITTED}"], 0), 0)
    ru = pc.greater(pc.fill_null(i[f"copies_{READ_UNCOMMITTED}"], 0), 0)
    cols = [pa.array([1] * i.num_rows), ok, pc.and_(pc.invert(ok), info),
            pc.and_(pc.invert(ok), pc.invert(info)),
            pc.and_(i["transactional"], i["must_see"]), rc, ru, pc.or_(rc, ru)]  # fmt: skip
    t = pa.table({"pid": i["pid"], **{f"c{j}": K._int(c) for j, c in enumerate(cols)}})
    g = t.group_by("pid").aggregate([(f"c{j}", "sum") for j in range(len(cols))])
    return [{**at, "rec": "c", "pid": r["pid"], "n": [r[f"c{j}_sum"] for j in range(len(cols))]}
            for r in g.to_pylist()]  # fmt: skip
