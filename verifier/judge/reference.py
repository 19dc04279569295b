"""The reference oracle (issue 46): a pipeline's output under faults against the same
query's output without faults, over the same input log.

Pure: Arrow tables of output rows in (as read back: ``RUN/pipelines/<name>/rows.parquet``
and the reference runs' beside it), a :class:`Comparison` out. Two ways to compare:

- **append output** (no key columns): as multisets of rows. A reference row the faulted
  output holds fewer times is *missing*; a row it holds more times than the reference
  (a replayed batch written again) is *extra*; a row the reference never wrote is
  *different*.
- **keyed output** (``KEY_COLUMNS``: update or complete output, a MERGE or upsert sink):
  as the final state per key, the last row of each key in read order (:data:`ORDER`). A
  key the faulted output lacks is *missing*; a key whose final row differs, or that the
  reference never had, is *different*; and an update row written more often than once
  (more often than the reference wrote it) is *extra*: a replayed batch's updates.

Columns that differ between two fault-free runs (processing times, random ids) are found
by comparing the two reference runs and left out, with those the user names
(``IGNORE_COLUMNS``). When the two reference runs still differ, or nothing is left to
compare, the query is not deterministic enough to judge: :attr:`Comparison.unjudgeable`
says why (the verdict is UNKNOWN with it, never PASS).

Values are compared by a canonical text of each (nulls apart), so a column's type never
makes two equal rows differ; nested values by their JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
import pyarrow as pa
import pyarrow.compute as pc

#: the read-back's order column: the position of each row in read order (a Kafka output
#: topic's rows by partition and offset; a table's as Spark read it, by its ``batch``
#: column first when it has one); never compared
ORDER = "__order"
MISSING, EXTRA, DIFFERENT = "missing", "extra", "different"
_NULL = "\x00null"  # a null's canonical text: never a value's
_N_F, _N_R = "__n_faulted", "__n_reference"


@dataclass
class Comparison:
    """What differs between the faulted output and the reference, and how it was judged."""

    keys: tuple[str, ...]
    compared: list[str]  # the columns compared (keys included)
    ignored: list[str]  # named by the user
    varying: list[str]  # found to differ between the two fault-free runs
    rows: dict[str, int]  # faulted, reference: rows read
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        (MISSING, EXTRA, DIFFERENT), 0))
    #: per kind, the first ``cap`` differences: {"row", "reference", "copies"...}
    samples: dict[str, list[dict]] = field(default_factory=lambda: {
        MISSING: [], EXTRA: [], DIFFERENT: []})
    unjudgeable: str | None = None

    @property
    def equal(self) -> bool:
        return self.unjudgeable is None and not any(self.counts.values())

    def to_json(self) -> dict:
        return {"oracle": "reference", "keys": list(self.keys), "compared": self.compared,
                "ignored": self.ignored, "varying": self.varying, "rows": self.rows,
                "counts": self.counts, "samples": self.samples,
                **({"unjudgeable": self.unjudgeable} if self.unjudgeable else {})}


def compare(faulted: pa.Table, reference: pa.Table, keys=(), ignore=(),
            second: pa.Table | None = None, cap: int = 20) -> Comparison:
    """The faulted output against ``reference``; ``second``, a second fault-free run, finds
    the columns that vary between fault-free runs (left out of the comparison)."""
    keys, ignore = tuple(keys), [c for c in ignore]
    cols = [c for c in reference.column_names if c != ORDER]
    result = Comparison(keys, [], ignore, [], {"faulted": faulted.num_rows,
                                               "reference": reference.num_rows})
    why = _schema_problem(faulted, reference, second, keys, ignore)
    if why:
        result.unjudgeable = why
        return result
    ref = _canonical(reference)
    sec = _canonical(second) if second is not None else None
    use = [c for c in cols if c not in ignore]
    if sec is not None and not keys and sec.num_rows != ref.num_rows:
        result.unjudgeable = (f"not deterministic enough to judge: two fault-free runs wrote "
                              f"{ref.num_rows} and {sec.num_rows} rows")
        return result
    if sec is not None:
        result.varying = _varying(ref, sec, keys, [c for c in use if c not in keys])
        use = [c for c in use if c not in result.varying]
    result.compared = use
    if not [c for c in use if c not in keys] and not (not keys and use):
        result.unjudgeable = ("nothing left to compare: every column but the keys "
                              f"{list(keys)} is ignored or differs between two fault-free "
                              f"runs ({', '.join(result.varying + ignore) or 'none'})")
        return result
    if reference.num_rows == 0:
        result.unjudgeable = ("the fault-free run wrote no rows: nothing to compare the "
                              "output with")
        return result
    if sec is not None:
        again = _diff(sec, ref, keys, use, cap=1)
        if any(n for n, _ in again.values()):
            found = ", ".join(f"{n} {k}" for k, (n, _) in again.items() if n)
            result.unjudgeable = (
                f"not deterministic enough to judge: two fault-free runs differ ({found}) "
                f"even without the columns that vary ({', '.join(result.varying) or 'none'})")
            return result
    for kind, (n, sample) in _diff(_canonical(faulted), ref, keys, use, cap).items():
        result.counts[kind], result.samples[kind] = n, sample
    return result


def _schema_problem(faulted, reference, second, keys, ignore) -> str | None:
    def names(t):
        return sorted(c for c in t.column_names if c != ORDER)
    if names(faulted) != names(reference):
        return (f"the output's columns {names(faulted)} are not the fault-free run's "
                f"{names(reference)}")
    if second is not None and names(second) != names(reference):
        return (f"two fault-free runs wrote different columns: {names(reference)} and "
                f"{names(second)}")
    unknown = [c for c in (*keys, *ignore) if c not in names(reference)]
    if unknown:
        return f"KEY_COLUMNS/IGNORE_COLUMNS name {unknown}, not columns of the output " \
               f"{names(reference)}"
    return None


def _canonical(table: pa.Table) -> pa.Table:
    """Every column as text (nulls as :data:`_NULL`), the order column kept (or made)."""
    out, names = [], []
    for name in table.column_names:
        if name == ORDER:
            continue
        col = table.column(name)
        t = col.type
        if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            text = pa.array([None if v is None else _json(v) for v in col.to_pylist()],
                            pa.string())
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            text = col.cast(pa.string())
        else:
            text = pc.cast(col, pa.string())
        out.append(pc.fill_null(text, _NULL))
        names.append(name)
    order = (table.column(ORDER).cast(pa.int64()) if ORDER in table.column_names
             else pa.array(range(table.num_rows), pa.int64()))
    return pa.table([*out, order], names=[*names, ORDER])


def _json(v) -> str:
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            return "0x" + v.hex()
    return orjson.dumps(v, default=str, option=orjson.OPT_SORT_KEYS).decode()


def _final(table: pa.Table, keys, cols) -> pa.Table:
    """The last row of each key in read order."""
    ordered = table.sort_by([(ORDER, "ascending")])
    rest = [c for c in cols if c not in keys]
    agg = ordered.group_by(list(keys), use_threads=False).aggregate(
        [(c, "last") for c in rest])
    return agg.select([*(f"{c}_last" for c in rest), *keys]).rename_columns([*rest, *keys])


def _counts(table: pa.Table, cols) -> pa.Table:
    return table.group_by(list(cols)).aggregate([([], "count_all")])


def _varying(ref: pa.Table, sec: pa.Table, keys, cols) -> list[str]:
    """Columns whose values differ between two fault-free runs: per key (keyed output),
    or as multisets of the column's values (append output)."""
    out = []
    if keys:
        a, b = _final(ref, keys, cols), _final(sec, keys, cols)
        joined = a.join(b, list(keys), join_type="inner", right_suffix="__b")
        for c in cols:
            if pc.any(pc.not_equal(joined[c], joined[f"{c}__b"])).as_py():
                out.append(c)
        return out
    for c in cols:
        a = _counts(ref.select([c]), [c])
        b = _counts(sec.select([c]), [c])
        j = a.join(b, [c], join_type="full outer", right_suffix="__b")
        if pc.any(pc.not_equal(pc.fill_null(j["count_all"], 0),
                               pc.fill_null(j["count_all__b"], 0))).as_py():
            out.append(c)
    return out


def _diff(faulted: pa.Table, ref: pa.Table, keys, cols, cap: int
          ) -> dict[str, tuple[int, list[dict]]]:
    """(count, sample) per kind of difference."""
    found = {MISSING: (0, []), EXTRA: (0, []), DIFFERENT: (0, [])}
    both = _joined_counts(faulted, ref, cols)
    f, r = both[_N_F], both[_N_R]
    if not keys:
        found[MISSING] = _rows(both, pc.greater(r, f), cols, cap, pc.subtract(r, f))
        found[EXTRA] = _rows(both, pc.and_(pc.greater(f, r), pc.greater(r, 0)), cols, cap,
                             pc.subtract(f, r))
        found[DIFFERENT] = _rows(both, pc.equal(r, 0), cols, cap, f)
        return found
    # an update written again: more copies than one, beyond the reference's own
    extra = pc.subtract(pc.subtract(f, 1), pc.max_element_wise(pc.subtract(r, 1), 0))
    found[EXTRA] = _rows(both, pc.greater(extra, 0), cols, cap, extra)
    a, b = _final(faulted, keys, cols), _final(ref, keys, cols)
    a = a.append_column("__in_f", pa.array([True] * a.num_rows, pa.bool_()))
    b = b.append_column("__in_r", pa.array([True] * b.num_rows, pa.bool_()))
    j = a.join(b, list(keys), join_type="full outer", right_suffix="__ref")
    in_f, in_r = pc.fill_null(j["__in_f"], False), pc.fill_null(j["__in_r"], False)
    rest = [c for c in cols if c not in keys]
    found[MISSING] = _keyed(j.filter(pc.invert(in_f)), keys, rest, cap, faulted_side=False)
    changed = pc.and_(in_f, pc.invert(in_r))
    for c in rest:
        differs = pc.fill_null(pc.not_equal(j[c], j[f"{c}__ref"]), False)
        changed = pc.or_(changed, pc.and_(pc.and_(in_f, in_r), differs))
    found[DIFFERENT] = _keyed(j.filter(changed), keys, rest, cap, faulted_side=True)
    return found


def _joined_counts(faulted: pa.Table, ref: pa.Table, cols) -> pa.Table:
    a = _counts(faulted.select(cols), cols).rename_columns([*cols, _N_F])
    b = _counts(ref.select(cols), cols).rename_columns([*cols, _N_R])
    j = a.join(b, list(cols), join_type="full outer", coalesce_keys=True)
    return j.set_column(j.schema.get_field_index(_N_F), _N_F,
                        pc.fill_null(j[_N_F], 0)).set_column(
        j.schema.get_field_index(_N_R), _N_R, pc.fill_null(j[_N_R], 0))


def _plain(v):
    return None if v == _NULL else v


def _rows(both: pa.Table, mask, cols, cap: int, copies) -> tuple[int, list[dict]]:
    """(rows counted with their copies, the first ``cap`` as samples): the rows of
    ``both`` where ``mask``, each ``copies`` times."""
    t, copies = both.filter(mask), copies.filter(mask)
    total = int(pc.sum(copies).as_py() or 0)
    sample = []
    for i, r in enumerate(t.slice(0, cap).select(list(cols)).to_pylist()):
        sample.append({"row": {k: _plain(v) for k, v in r.items()},
                       "copies": int(copies[i].as_py()),
                       "in_output": int(t[_N_F][i].as_py()),
                       "in_reference": int(t[_N_R][i].as_py())})
    return total, sample


def _keyed(t: pa.Table, keys, rest, cap: int, faulted_side: bool) -> tuple[int, list[dict]]:
    sample = []
    for r in t.slice(0, cap).to_pylist():
        key = {k: _plain(r[k]) for k in keys}
        mine = {**key, **{c: _plain(r[c]) for c in rest}} if r.get("__in_f") else None
        theirs = ({**key, **{c: _plain(r[f"{c}__ref"]) for c in rest}}
                  if r.get("__in_r") else None)
        sample.append({"row": mine if faulted_side else theirs, "reference": theirs,
                       "output": mine,
                       "what": ("different" if mine and theirs else
                                "a key the fault-free run never wrote" if mine else
                                "missing")})
    return t.num_rows, sample


__all__ = ["DIFFERENT", "EXTRA", "MISSING", "ORDER", "Comparison", "compare"]
