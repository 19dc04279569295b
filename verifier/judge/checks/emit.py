"""Anomaly rows of one (topic, partition), from the frames of :mod:`verifier.judge.checks.kernel`.

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

from verifier.judge.checks import kernel as K
from verifier.judge.model import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
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
    """Everything the checks report about one partition, as :data:`OUT_SCHEMA` rows."""
    out: list[dict] = []
    at = {"topic": topic, "partition": part}
    cells, exact = K.cells(obs, ctx)
    ids = K.ids(cells, ctx)
    ident = K.ident(ids, sends)
    out += delivery_and_inconsistent(cells, exact, ctx, at)
    out += duplicates(ids, at) + reorder(ids, at) + lost(ident, ctx, at)
    out += unsent(ident, at) + aborted(cells, ctx, at) + txn_visible(cells, ctx, at)
    out += counts(ident, at)
    return pa.Table.from_pylist(out, OUT_SCHEMA)


def delivery_and_inconsistent(c, exact, ctx: K.Ctx, at: dict) -> list[dict]:
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
    for r in c.filter(bad).to_pylist():
        one = {f: r[f] for f in K.IDENT_FIELDS}
        one, other = exact.get(r["offset"], (one, one))
        out.append({**at, "rec": "a", "kind": INCONSISTENT, "pid": one["pid"],
                    "seq": one["seq"], "offset": r["offset"], "offsets": [r["offset"]],
                    "t": one["ts_send"],
                    "evidence": _ev(one=one, other=other,
                                    foreign_seen=r["fany"] == 1)})  # fmt: skip
    return out


def duplicates(ids: pa.Table, at: dict) -> list[dict]:
    """One identity at >= 2 offsets: same session (copies > sessions), cross (>= 2)."""
    out = []
    for iso in ISOLATIONS:
        cp = f"copies_{iso}"
        for r in ids.filter(pc.fill_null(pc.greater_equal(ids[cp], 2), False)).to_pylist():
            copies, sessions = r[cp], r[f"sessions_{iso}"]
            first, last = r[f"first_{iso}"], r[f"last_{iso}"]
            row = {**at, "rec": "a", "isolation": iso, "pid": r["pid"], "ses": r[f"fses_{iso}"],
                   "seq": r["seq"], "offset": first, "offsets": [first, last], "t": r["t"],
                   "evidence": _ev(copies=copies, sessions=sessions, first_offset=first,
                                   last_offset=last)}  # fmt: skip
            if copies > sessions:
                out.append({**row, "kind": DUP_SAME})
            if sessions >= 2:
                out.append({**row, "kind": DUP_CROSS})
    return out


def reorder(ids: pa.Table, at: dict) -> list[dict]:
    """First copies of one session: a sequence lower than one at a lower offset."""
    out = []
    for iso in ISOLATIONS:
        f = ids.filter(pc.is_valid(ids[f"first_{iso}"]))
        f = f.select(["pid", f"fses_{iso}", f"first_{iso}", "seq", "t"])
        f = f.rename_columns(["pid", "ses", "offset", "seq", "t"])
        f = f.sort_by([("pid", "ascending"), ("ses", "ascending"), ("offset", "ascending")])
        if f.num_rows < 2 or not _maybe_reordered(f):
            continue
        best, key = None, None
        for r in f.to_pylist():
            if (r["pid"], r["ses"]) != key:
                best, key = None, (r["pid"], r["ses"])
            if best and r["seq"] is not None and best[0] is not None and r["seq"] < best[0]:
                out.append({**at, "rec": "a", "kind": REORDER, "isolation": iso,
                            "pid": r["pid"], "ses": r["ses"], "seq": r["seq"],
                            "offset": r["offset"], "offsets": [best[1], r["offset"]], "t": r["t"],
                            "evidence": _ev(higher_seq=best[0],
                                            higher_seq_offset=best[1])})  # fmt: skip
            cur = (r["seq"], r["offset"])
            best = cur if best is None or K._spark_key2(cur) > K._spark_key2(best) else best
    return out


def _maybe_reordered(f: pa.Table) -> bool:
    """Cheap filter: any row whose seq is below its predecessor's in the sorted order
    (a reorder implies one somewhere; sessions change there too, a false alarm only)."""
    seq = pc.fill_null(f["seq"], 0).combine_chunks()
    return pc.any(pc.less(seq[1:], seq[:-1])).as_py() or False


def lost(i: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """Must-see identities some reader at some level did not deliver (unseen if late)."""
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
        ev = _ev(in_log=any(flags), seen_by=seen_by,
                 acknowledged=r["ok"], transactional=r["transactional"])  # fmt: skip
        for iso in isos:
            missing = [k for k in ctx.iso_combos[iso] if not flags[k]]
            for kind, who in ((LOST, [k for k in missing if not late[k]]),
                              (UNSEEN, [k for k in missing if late[k]])):  # fmt: skip
                if who:
                    out.append({**at, "rec": "a", "kind": kind, "partition": r["p"],
                                "isolation": iso,
                                "reader": ",".join(ctx.combos[k][0] for k in who),
                                "pid": r["pid"], "seq": r["seq"], "t": r["t_send"],
                                "evidence": ev})  # fmt: skip
    return out


def _combo_col(reader: str, isolation: str) -> str:
    return "n_" + (reader + "_" + isolation).replace("-", "_").replace(".", "_")


def unsent(i: pa.Table, at: dict) -> list[dict]:
    """An observed identity of a known producer that no history line ever sent."""
    out = []
    for r in i.filter(pc.is_null(i["sent"])).to_pylist():
        off = r["first_read_uncommitted"]
        out.append({**at, "rec": "a", "kind": FOREIGN, "partition": r["p"], "pid": r["pid"],
                    "seq": r["seq"], "offset": r["first_read_committed"] if off is None else off,
                    "t": r["t"],
                    "evidence": _ev(error="identity in no producer history")})  # fmt: skip
    return out


def _txn_cells(c: pa.Table, ctx: K.Ctx) -> pa.Table:
    c = c.filter(pc.and_(pc.greater(c["ndec"], 0), pc.is_valid(c["txn"])))
    return c.join(ctx.status.select(["pid", "ses", "txn", "status", "abort_intent"]),
                  ["pid", "ses", "txn"], join_type="left outer")  # fmt: skip


def aborted(c: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """Records of a transaction that did not commit, delivered (reported at both levels)."""
    t = _txn_cells(c, ctx)
    t = t.filter(pc.is_in(pc.fill_null(t["status"], "open"), pa.array(NOT_COMMITTED)))
    out = []
    for r in t.to_pylist():
        status = r["status"] or "open"
        for iso in sorted({iso for _, iso in ctx.combos}):
            who = [ctx.combos[k][0] for k in ctx.iso_combos[iso] if r[f"n{k}"] > 0]
            if who:
                out.append({**at, "rec": "a", "kind": ABORTED_READ, "isolation": iso,
                            "reader": ",".join(who), "pid": r["pid"], "ses": r["ses"],
                            "seq": r["seq"], "txn": r["txn"], "offset": r["offset"],
                            "offsets": [r["offset"]], "t": r["ts_send"],
                            "evidence": _ev(txn_status=status,
                                            abort_intent=r["abort_intent"])})  # fmt: skip
    return out


def txn_visible(c: pa.Table, ctx: K.Ctx, at: dict) -> list[dict]:
    """Per transaction: distinct records each (reader, isolation) saw in this partition."""
    t = c.filter(pc.and_(pc.greater(c["ndec"], 0), pc.is_valid(c["txn"])))
    if t.num_rows == 0:
        return []
    nc = len(ctx.combos)
    keys = ["pid", "ses", "txn", "p", "seq"]
    per = t.group_by(keys).aggregate([(f"n{k}", "max") for k in range(nc)])
    per = pa.table({**{k: per[k] for k in keys[:3]},
                    **{f"v{k}": K._int(pc.greater(per[f"n{k}_max"], 0)) for k in range(nc)}})
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
