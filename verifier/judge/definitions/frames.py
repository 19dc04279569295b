"""The per-partition pass: one (topic, partition)'s observation rows and sends, in Arrow.

Spark brings each (topic, partition)'s rows together with one shuffle (a cogroup); this
module derives, with pyarrow's kernels and no Python loop over rows, the frames every
check shares (the definitions the Spark version of ``derive`` had):

``cells``  one row per offset any reader saw: deliveries per (reader, isolation), the
           smallest decoded identity (``id_min``), whether readers disagree (``differ``)
``ids``    one row per observed identity (pid, p, seq): per isolation level its copies,
           first copy, last offset and sessions; per (reader, isolation) whether seen
``ident``  the producers' sends full-outer-joined with ``ids``

:mod:`verifier.judge.definitions.kinds` turns them into anomaly rows. An identity is checked in the
partition where it was observed; its sends come to its home (its producer's topic,
partition ``p``): the same place unless a record sits in a partition it does not name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.model import ISOLATIONS, Drain

#: the decoded identity as one comparable value; ts is part of it because a re-send
#: carries a new send time: two readers seeing different ts at one offset saw two records
IDENT_FIELDS = ("pid", "p", "seq", "ses", "txn", "ts_send")
IDENTITY = ["pid", "p", "seq"]
_KEEP_NULLS = pc.ScalarAggregateOptions(skip_nulls=False)


@dataclass
class Ctx:
    """Run-wide facts the pass needs (shipped to the Python workers with the function)."""

    combos: list[tuple[str, str]]
    drain: Drain  # completeness per (topic, partition, reader, isolation)
    status: pa.Table  # pid, ses, txn, status, abort_intent
    pids: list[str] = field(default_factory=list)  # the run's producer ids (codes shipped)
    topics: dict[str, str] = field(default_factory=dict)  # pid -> its topic (home)
    iso_combos: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self):
        self.iso_combos = {i: [c for c, (_, ci) in enumerate(self.combos) if ci == i]
                           for i in ISOLATIONS}  # fmt: skip

    def late(self, topic: str, partition: int) -> list[bool]:
        """Per (reader, isolation) pair: has it possibly not read this partition to its end?"""
        return [self.drain.incomplete(topic, partition, r, i) for r, i in self.combos]


def _int(col) -> pa.ChunkedArray:
    return pc.cast(col, pa.int64())


def _any(cols: list):
    out = cols[0]
    for c in cols[1:]:
        out = pc.or_(out, c)
    return out


def present(t: pa.Table, ctx: Ctx, iso: str, col: str = "n"):
    """True for a cell (``col`` = "n": any row) or a placement (``col`` = "d": decoded
    rows) that some reader delivered at ``iso``."""
    cols = [pc.greater(t[f"{col}{c}"], 0) for c in ctx.iso_combos[iso]]
    return _any(cols) if cols else pa.array([False] * t.num_rows)


def _spark_key(row: dict):
    """Spark's struct ordering: field by field, null before any value."""
    return tuple((0,) if row[f] is None else (1, row[f]) for f in IDENT_FIELDS)


def cells(obs: pa.Table, ctx: Ctx) -> tuple[pa.Table, dict[int, tuple[dict, dict]]]:
    """Per offset: counts, id_min fields, ``differ``; and {offset: (id_min, id_max)} of the
    offsets where decoded rows disagree (exact, Spark-ordered; rare)."""
    dec = pc.invert(obs["fgn"])
    cols = {"offset": obs["offset"], "dec": _int(dec), "fgn": _int(obs["fgn"])}
    for c in range(len(ctx.combos)):
        cols[f"n{c}"] = _int(pc.equal(obs["ci"], c))
        cols[f"d{c}"] = _int(pc.and_(pc.equal(obs["ci"], c), dec))
    for f in IDENT_FIELDS:
        cols[f"v_{f}"] = pc.if_else(dec, obs[f], None)
        cols[f"z_{f}"] = _int(pc.and_(dec, pc.is_null(obs[f])))
    aggs = [(f"{x}{c}", "sum") for x in "nd" for c in range(len(ctx.combos))]
    aggs += [("dec", "sum"), ("fgn", "max")]
    for f in IDENT_FIELDS:
        aggs += [(f"v_{f}", "min"), (f"v_{f}", "max"), (f"z_{f}", "sum")]
    g = pa.table(cols).group_by("offset").aggregate(aggs)
    # the decoded structs differ iff some field differs or is null in some rows only
    ndec = g["dec_sum"]
    differ = [pc.fill_null(pc.not_equal(g[f"v_{f}_min"], g[f"v_{f}_max"]), False)
              for f in IDENT_FIELDS]  # fmt: skip
    differ += [pc.and_(pc.greater(g[f"z_{f}_sum"], 0), pc.less(g[f"z_{f}_sum"], ndec))
               for f in IDENT_FIELDS]  # fmt: skip
    out = {"offset": g["offset"],
           **{f"{x}{c}": g[f"{x}{c}_sum"] for x in "nd" for c in range(len(ctx.combos))},
           "ndec": ndec, "fany": g["fgn_max"], "differ": _any(differ)}  # fmt: skip
    out.update({f: g[f"v_{f}_min"] for f in IDENT_FIELDS})
    t = pa.table(out)
    exact = _exact(obs, t) if pc.any(t["differ"]).as_py() else {}
    if exact:  # id_min of a disagreeing offset is the smallest whole struct, not per field
        odd = pc.is_in(t["offset"], pa.array(list(exact), pa.int64()))
        rows = t.filter(odd).to_pylist()
        for r in rows:
            r.update(exact[r["offset"]][0])
        t = pa.concat_tables([t.filter(pc.invert(odd)), pa.Table.from_pylist(rows, t.schema)])
    return t, exact


def _exact(obs: pa.Table, t: pa.Table) -> dict[int, tuple[dict, dict]]:
    offs = t.filter(t["differ"])["offset"]
    rows = obs.filter(pc.and_(pc.is_in(obs["offset"], offs.combine_chunks()),
                              pc.invert(obs["fgn"])))  # fmt: skip
    by: dict[int, list[dict]] = {}
    for r in rows.select(["offset", *IDENT_FIELDS]).to_pylist():
        by.setdefault(r.pop("offset"), []).append(r)
    return {o: (min(rs, key=_spark_key), max(rs, key=_spark_key)) for o, rs in by.items()}


def placements(obs: pa.Table, ctx: Ctx) -> pa.Table:
    """One row per (offset, decoded identity) read in this partition: decoded rows per
    (reader, isolation) (``d<k>``), the smallest session, transaction and send time, and
    whether the record was meant to abort (its ``abort`` field).

    Built from the rows, not from the per-offset cells: where readers disagree at an
    offset each identity keeps only the readers that decoded *it* (a reader that got
    undecodable bytes, or another record, there did not get this one).
    """
    dec = obs.filter(pc.invert(obs["fgn"]))
    cols = {k: dec[k] for k in ("offset", *IDENTITY, "ses", "txn", "ts_send", "abort")}
    for c in range(len(ctx.combos)):
        cols[f"d{c}"] = _int(pc.equal(dec["ci"], c))
    aggs = [("ses", "min"), ("txn", "min"), ("ts_send", "min"), ("abort", "any")]
    aggs += [(f"d{c}", "sum") for c in range(len(ctx.combos))]
    g = pa.table(cols).group_by(["offset", *IDENTITY]).aggregate(aggs)
    return g.rename_columns([n.removesuffix("_min").removesuffix("_sum").removesuffix("_any")
                             for n in g.column_names])


def at_home(pl: pa.Table, ctx: Ctx, topic: str, part: int) -> pa.ChunkedArray:
    """True for a placement whose identity names this (topic, partition): its producer's
    topic and its ``p``. Any other is a record sitting where it does not belong."""
    homes = pa.array([ctx.topics.get(p) for p in ctx.pids], pa.string())
    home_topic = pc.take(homes, pc.index_in(pl["pid"], pa.array(ctx.pids, pa.string())))
    return pc.fill_null(pc.and_(pc.equal(home_topic, topic), pc.equal(pl["p"], part)), False)


def sent_mask(pl: pa.Table, sends: pa.Table) -> pa.ChunkedArray:
    """True for a placement whose identity some history sent."""
    if pl.num_rows == 0 or sends.num_rows == 0:
        return pa.chunked_array([pa.array([False] * pl.num_rows, pa.bool_())])
    key = pa.table({"_i": pa.array(range(pl.num_rows), pa.int64()),
                    **{k: pl[k] for k in IDENTITY}})  # fmt: skip
    s = sends.select(IDENTITY).append_column("_s", pa.array([True] * sends.num_rows))
    j = key.join(s, IDENTITY, join_type="left outer").sort_by("_i")
    return pc.fill_null(j["_s"], False)


def ids(pl: pa.Table, ctx: Ctx) -> pa.Table:
    """One row per identity placed at its home here (see the module docstring), from
    :func:`placements` that are at home and were sent."""
    nc = len(ctx.combos)
    seen = pl.select(IDENTITY).append_column("t", pl["ts_send"])
    for k in range(nc):
        seen = seen.append_column(f"s{k}", pc.greater(pl[f"d{k}"], 0))
    base = seen.group_by(IDENTITY).aggregate([("t", "min")] + [(f"s{k}", "any")
                                                               for k in range(nc)])  # fmt: skip
    base = base.rename_columns([n.removesuffix("_min").removesuffix("_any")
                                for n in base.column_names])  # fmt: skip
    for iso in ISOLATIONS:
        here = pl.filter(present(pl, ctx, iso, "d")).sort_by("offset")
        a = here.group_by(IDENTITY, use_threads=False).aggregate([
            ("offset", "count"), ("offset", "first"), ("ses", "first", _KEEP_NULLS),
            ("offset", "max"), ("ses", "count_distinct"),
        ])  # fmt: skip
        a = a.rename_columns([*IDENTITY, f"copies_{iso}", f"first_{iso}", f"fses_{iso}",
                              f"last_{iso}", f"sessions_{iso}"])  # fmt: skip
        base = base.join(a, IDENTITY, join_type="left outer")
    return base


def ident(ids_t: pa.Table, sends: pa.Table) -> pa.Table:
    """Sends (one row per identity of this home partition) full-outer-joined with ids."""
    s = sends.select([*IDENTITY, "ok", "info", "must_see", "t_send", "transactional",
                      "acked_offset"])
    s = s.append_column("sent", pa.array([True] * s.num_rows, pa.bool_()))
    if ids_t.num_rows == 0:
        return _pad(s, ids_t.schema)
    if s.num_rows == 0:
        return _pad(ids_t, s.schema)
    return s.join(ids_t, IDENTITY, join_type="full outer")


def _pad(t: pa.Table, other: pa.Schema) -> pa.Table:
    for f in other:
        if f.name not in t.column_names:
            t = t.append_column(f, pa.nulls(t.num_rows, f.type))
    return t


def _spark_key2(values: tuple):
    """Spark's ordering of a small struct given as a tuple: null before any value."""
    return tuple((0,) if v is None else (1, v) for v in values)
