"""What the producers' histories say, reduced in Arrow on the driver before Spark sees it.

The histories are read by the driver anyway (one JSON-lines file per producer); grouping
their operations here, with pyarrow's C++ kernels, turns ~2 lines per send into one row
per identity and one row per transaction, so Spark never shuffles raw history lines.

``txn_status``   one row per (pid, ses, txn): outcome flags and ``status``
``sends``        one row per identity (pid, p, seq): outcome, must it be visible?
``txn_sizes``    one row per committed transaction: records not definitely failed
``throughput``   acknowledged sends per producer per second
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

TXN_KEYS = ["pid", "ses", "txn"]
ATTEMPT_KEYS = ["pid", "ses", "txn", "p", "seq"]
IDENTITY = ["pid", "p", "seq"]
_NULL_IF_NONE = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)


def _is(t: pa.Table, f: str, typ: str | None = None) -> pa.ChunkedArray:
    c = pc.equal(t["f"], f)
    return c if typ is None else pc.and_(c, pc.equal(t["type"], typ))


def _fill(col, value=False):
    return pc.fill_null(col, value)


def txn_flags(hist: pa.Table) -> pa.Table:
    """Per (pid, ses, txn): commit ok / failed / invoked, abort invoked, abort intent.

    A failed transaction the generator redoes keeps its number: its first attempt's abort
    (or failed commit) says nothing of how the redo ended. So the failure and the abort
    count only when they came at or after the transaction's last begin (``begin_t``,
    ``abort_t``, ``fail_t``: the latest of each, which merge by max)."""
    src = hist.filter(pc.is_valid(hist["txn"]))
    ev = src.select(TXN_KEYS)
    cols = {
        "commit_ok": _fill(_is(src, "commit", "ok")),
        "commit_invoked": _fill(_is(src, "commit")),
        "abort_intent": pc.if_else(_fill(_is(src, "begin")), src["abort"], None),
        "begin_t": pc.if_else(_fill(_is(src, "begin", "invoke")), src["t"], None),
        "abort_t": pc.if_else(_fill(_is(src, "abort", "invoke")), src["t"], None),
        "fail_t": pc.if_else(_fill(_is(src, "commit", "fail")), src["t"], None),
    }
    for name, col in cols.items():
        ev = ev.append_column(name, col)
    return _flags_of(ev)


def _flags_of(ev: pa.Table) -> pa.Table:
    aggs = [(c, "any") for c in ("commit_ok", "commit_invoked")]
    aggs.append(("abort_intent", "any", _NULL_IF_NONE))
    aggs += [(c, "max") for c in ("begin_t", "abort_t", "fail_t")]
    out = ev.group_by(TXN_KEYS).aggregate(aggs)
    out = out.rename_columns([n.removesuffix("_any").removesuffix("_max")
                              for n in out.column_names])

    def since_last_begin(col: str) -> pa.ChunkedArray:
        late = pc.or_kleene(pc.is_null(out["begin_t"]),
                            pc.greater_equal(out[col], out["begin_t"]))
        return _fill(pc.and_kleene(pc.is_valid(out[col]), late))

    out = out.append_column("commit_fail", since_last_begin("fail_t"))
    return out.append_column("abort_invoked", since_last_begin("abort_t"))


def unknown_commits(flags: pa.Table) -> pa.Table:
    """Transactions whose commit was invoked with no known outcome (need the readers)."""
    settled = pc.or_(pc.or_(flags["commit_ok"], flags["commit_fail"]), flags["abort_invoked"])
    return flags.filter(pc.and_(flags["commit_invoked"], pc.invert(settled))).select(TXN_KEYS)


def txn_status(flags: pa.Table, seen_committed: set[tuple]) -> pa.Table:
    """formats §2: committed = commit ok, or commit info and a read_committed reader saw
    one of its records; aborted = commit failed or abort invoked; else open/unknown."""
    keys = zip(*(flags[k].to_pylist() for k in TXN_KEYS), strict=True)
    seen = pa.array([k in seen_committed for k in keys], pa.bool_())
    status = pc.case_when(
        pc.make_struct(flags["commit_ok"], pc.or_(flags["commit_fail"], flags["abort_invoked"]),
                       pc.and_(flags["commit_invoked"], seen), flags["commit_invoked"]),
        "committed", "aborted", "committed", "commit-unknown", "open",
    )  # fmt: skip
    return flags.append_column("status", status)


def attempts(hist: pa.Table) -> pa.Table:
    """One row per send attempt key (pid, ses, txn, p, seq): what its lines say.

    Grouped on an integer code of the producer id (hashing strings doubled the time)
    with narrow counters; ``sends`` and ``txn_sizes`` share the result. The same as
    :func:`finish_attempts` of :func:`attempt_parts` (the live path reduces the histories
    chunk by chunk as they are tailed and merges the parts: :func:`merge_attempt_parts`).
    """
    return finish_attempts(attempt_parts(hist))


def attempt_parts(hist: pa.Table) -> pa.Table:
    """The mergeable reduction of some history lines (any slice of them) per attempt key:
    invokes, completions, ok / info / fail seen, first time, highest offset."""
    ev = hist.filter(_fill(_is(hist, "send")))
    typ = ev["type"]
    pids = ev["pid"].unique()
    inv = pc.equal(typ, "invoke")
    t = pa.table({
        "pc": pc.index_in(ev["pid"], pids), "ses": ev["ses"], "txn": ev["txn"], "p": ev["p"],
        "seq": ev["seq"], "t": ev["t"], "inv": pc.cast(inv, pa.int8()),
        "done": pc.cast(pc.invert(inv), pa.int8()), "ok": pc.equal(typ, "ok"),
        "info": pc.equal(typ, "info"), "failed": pc.equal(typ, "fail"), "offset": ev["offset"],
    })  # fmt: skip
    a = t.group_by(["pc", *ATTEMPT_KEYS[1:]]).aggregate([
        ("inv", "sum"), ("done", "sum"), ("ok", "any"), ("info", "any"), ("failed", "any"),
        ("t", "min"), ("offset", "max"),
    ])  # fmt: skip
    return pa.table({"pid": pc.take(pids, a["pc"]), **{k: a[k] for k in ATTEMPT_KEYS[1:]},
                     "inv": a["inv_sum"], "done": a["done_sum"], "ok": a["ok_any"],
                     "info": a["info_any"], "failed": a["failed_any"], "t": a["t_min"],
                     "offset": a["offset_max"]})  # fmt: skip


def merge_attempt_parts(parts: list[pa.Table]) -> pa.Table:
    """Several :func:`attempt_parts` (of disjoint slices of the lines) as one."""
    if len(parts) == 1:
        return parts[0]
    t = pa.concat_tables(parts)
    a = t.group_by(ATTEMPT_KEYS).aggregate([
        ("inv", "sum"), ("done", "sum"), ("ok", "any"), ("info", "any"), ("failed", "any"),
        ("t", "min"), ("offset", "max"),
    ])  # fmt: skip
    return pa.table({**{k: a[k] for k in ATTEMPT_KEYS},
                     "inv": a["inv_sum"], "done": a["done_sum"], "ok": a["ok_any"],
                     "info": a["info_any"], "failed": a["failed_any"], "t": a["t_min"],
                     "offset": a["offset_max"]})  # fmt: skip


def finish_attempts(a: pa.Table) -> pa.Table:
    """:func:`attempts` from the parts of every line."""
    # a send without completion line (the process died) is info (formats §2)
    info = pc.or_(a["info"], pc.greater(a["inv"], a["done"]))
    return pa.table({**{k: a[k] for k in ATTEMPT_KEYS}, "ok": a["ok"], "info": info,
                     "failed": a["failed"], "t": a["t"], "offset": a["offset"]})  # fmt: skip


def merge_flags(parts: list[pa.Table]) -> pa.Table:
    """Several :func:`txn_flags` (of disjoint slices of the lines) as one."""
    if len(parts) == 1:
        return parts[0]
    t = pa.concat_tables(parts)
    return _flags_of(t.drop_columns(["commit_fail", "abort_invoked"]))


def _committed(status: pa.Table) -> pa.Table:
    return status.filter(pc.equal(status["status"], "committed")).select(TXN_KEYS)


def sends(a: pa.Table, status: pa.Table, topics: dict[str, str]) -> pa.Table:
    """One row per identity the producers sent (``a``: :func:`attempts`), keyed by its
    home (topic, partition)."""
    com = _committed(status)
    com = com.append_column("in_committed", pa.array([True] * com.num_rows, pa.bool_()))
    a = a.join(com, TXN_KEYS, join_type="left outer")
    # a record in a committed txn was appended unless its send definitely failed
    visible = pc.if_else(pc.is_null(a["txn"]), a["ok"],
                         pc.and_(_fill(a["in_committed"]), pc.or_(a["ok"], a["info"])))  # fmt: skip
    a = a.append_column("must_see", visible).append_column("tx", pc.is_valid(a["txn"]))
    s = a.group_by(IDENTITY).aggregate([("ok", "any"), ("info", "any"), ("must_see", "any"),
                                        ("t", "min"), ("tx", "any"),
                                        ("offset", "max")])  # fmt: skip
    home = pc.take(pa.array(list(topics.values())),
                   pc.index_in(s["pid"], pa.array(list(topics))))  # fmt: skip
    return pa.table({
        "topic": home, "partition": s["p"], "pid": s["pid"], "p": s["p"], "seq": s["seq"],
        "ok": s["ok_any"], "info": s["info_any"], "must_see": s["must_see_any"],
        "t_send": s["t_min"], "transactional": s["tx_any"], "acked_offset": s["offset_max"],
    })  # fmt: skip


def txn_sizes(a: pa.Table, status: pa.Table) -> pa.Table:
    """Committed transactions (``a``: :func:`attempts`): records that must be visible
    (the same rule as ``sends``' ``must_see``: some attempt of the send within the
    session ended ok or info), first send time, partitions.

    A send retried or redone within its session (the redo of a failed transaction keeps
    ``ses``, ``txn`` and the records) is one record: an attempt that failed before the
    redo's ok does not make it leave the transaction."""
    a = a.filter(pc.and_(pc.is_valid(a["txn"]), pc.or_(a["ok"], a["info"])))
    a = a.join(_committed(status), TXN_KEYS, join_type="inner")
    per_p = a.group_by([*TXN_KEYS, "p"]).aggregate([("seq", "count"), ("t", "min")])
    per_p = per_p.sort_by([("p", "ascending")])  # ordered aggregation below: sorted lists
    out = per_p.group_by(TXN_KEYS, use_threads=False).aggregate(
        [("seq_count", "sum"), ("t_min", "min"), ("p", "list")])
    return pa.table({"pid": out["pid"], "ses": out["ses"], "txn": out["txn"],
                     "size": out["seq_count_sum"], "t": out["t_min_min"],
                     "partitions": out["p_list"]})  # fmt: skip


def throughput(hist: pa.Table, bucket_ms: int) -> dict[str, list[tuple[int, int]]]:
    """Acknowledged sends per ``bucket_ms`` per producer (from the histories' ok lines)."""
    ok = hist.filter(_fill(_is(hist, "send", "ok")))
    ok = ok.filter(pc.is_valid(ok["t"]))
    b = pc.multiply(pc.floor(pc.divide(pc.cast(ok["t"], pa.float64()), bucket_ms)), bucket_ms)
    g = pa.table({"pid": ok["pid"], "b": pc.cast(b, pa.int64())}).group_by(["pid", "b"])
    out: dict[str, list[tuple[int, int]]] = {}
    for r in g.aggregate([("b", "count")]).to_pylist():
        out.setdefault(r["pid"], []).append((r["b"], r["b_count"]))
    return {k: sorted(v) for k, v in out.items()}
