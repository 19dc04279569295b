"""A mutated copy judged only where the mutation can change anything (issue 39).

Every check works per (topic, partition), except the torn-transaction sums, which span
the partitions of one transaction. So a copy differs from its run only in the
**scope** of the mutation: the partitions whose observations, acknowledged offsets, sends
or end offsets it changed, closed over transactions (every partition of a transaction
with a send there). The copy's analysis is the run's (its every anomaly row, counted and
kept by :func:`verifier.judge.selftest.analysis.analyse`) with the scope's part replaced: the
scope is judged before and after the mutation by the same definitions without Spark
(:mod:`verifier.judge.selftest.local`), the difference is added to the run's counts, and
the verdict table is built from the merged counts with the copy's config and drain. The
live path is replayed on the scope alone too (its states are per partition).

A change that is not confined to partitions (the drain's completion, the run's header,
a history line that is neither a send nor a transaction's) returns no scope: the copy is
then analysed whole, as ``scoped=False`` does for every copy (the reference).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.model import OBSERVER, TORN, Drain, RunData
from verifier.judge.selftest.image import RunImage
from verifier.rundata.history import HISTORY_SCHEMA

_OPS = ("invoke", "ok", "fail", "info")
_ARROW = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "boolean": pa.bool_()}


@dataclass(frozen=True)
class Scope:
    """The partitions (topic, partition) and transactions (pid, ses, txn) a mutation can
    change the anomalies of."""

    parts: frozenset
    txns: frozenset

    def holds(self, row: dict) -> bool:
        """Is this anomaly row (or live-vs-batch difference) inside the scope?"""
        if row.get("kind") == TORN and row.get("partition") is None:
            return (row.get("pid"), row.get("ses"), row.get("txn")) in self.txns
        return (row.get("topic"), row.get("partition")) in self.parts


def _part_key(key: str) -> tuple[str, int]:
    topic, _, part = key.rpartition("-")
    return topic, int(part)


def _changed_parts(a: pa.Table | None, b: pa.Table | None) -> set[tuple[str, int]]:
    """The (topic, partition)s whose rows differ between two observation tables."""
    tables = [t for t in (a, b) if t is not None]
    keys = set()
    for t in tables:
        keys |= set(zip(t["topic"].to_pylist(), t["partition"].to_pylist(), strict=True))
    if a is None or b is None:
        return keys
    cols = [c for c in a.column_names if c in b.column_names]
    out = set()
    for topic, part in keys:
        sides = [t.filter(pc.and_(pc.equal(t["topic"], topic), pc.equal(t["partition"], part)))
                 .select(cols) for t in (a, b)]  # fmt: skip
        if sides[0].equals(sides[1]):  # untouched rows keep their order: most partitions
            continue
        if sides[0].num_rows != sides[1].num_rows or \
                sides[0].sort_by([(c, "ascending") for c in cols]).to_pylist() != \
                sides[1].sort_by([(c, "ascending") for c in cols]).to_pylist():
            out.add((topic, part))
    return out


def scope_of(before: RunImage, after: RunImage) -> Scope | None:
    """What ``after`` (a mutated clone of ``before``) changed; None: not confined to
    partitions (judge the copy whole)."""
    parts: set[tuple[str, int]] = set()
    txns: set[tuple] = set()
    for combo in set(before.obs) | set(after.obs):
        a, b = before.obs.get(combo), after.obs.get(combo)
        if a is not b:
            parts |= _changed_parts(a, b)
    cfg_a, cfg_b = before.config, after.config
    if {k: v for k, v in cfg_a.items() if k != "producers"} != \
            {k: v for k, v in cfg_b.items() if k != "producers"}:
        return None
    for pid in set(cfg_a["producers"]) | set(cfg_b["producers"]):
        if cfg_a["producers"].get(pid) != cfg_b["producers"].get(pid):
            for img in (before, after):  # a new producer: every partition of its topic
                if pid in img.config["producers"]:
                    topic = img.topic_of(pid)
                    parts |= {(topic, p) for p in after.partitions(topic)}
    for pid in set(before.histories) | set(after.histories):
        la, lb = before.histories.get(pid, []), after.histories.get(pid, [])
        spec = cfg_b["producers"].get(pid) or cfg_a["producers"].get(pid)
        if spec is None:
            return None
        for i in range(max(len(la), len(lb))):
            x = la[i] if i < len(la) else None
            y = lb[i] if i < len(lb) else None
            if x == y:
                continue
            for z in (x, y):
                if z is None or z.get("type") == "session":
                    continue
                if z.get("type") == "header":  # a new producer's (its topic is in scope)
                    if pid in before.histories:
                        return None
                    continue
                if z.get("f") == "send" and z.get("p") is not None:
                    parts.add((spec["topic"], z["p"]))
                elif z.get("txn") is not None:
                    txns.add((pid, z.get("ses"), z["txn"]))
                else:
                    return None
    da, db = before.drain, after.drain
    if {k: v for k, v in da.items() if k not in ("end_offsets", "observer_positions")} != \
            {k: v for k, v in db.items() if k not in ("end_offsets", "observer_positions")}:
        return None
    for section in ("end_offsets", "observer_positions"):
        sa, sb = da.get(section) or {}, db.get(section) or {}
        for iso in set(sa) | set(sb):
            ea, eb = sa.get(iso) or {}, sb.get(iso) or {}
            parts |= {_part_key(k) for k in set(ea) | set(eb) if ea.get(k) != eb.get(k)}
    for iso in set(before.progress) | set(after.progress):
        pa_, pb_ = before.progress.get(iso) or {}, after.progress.get(iso) or {}
        for section in ("position", "written"):
            xa, xb = pa_.get(section) or {}, pb_.get(section) or {}
            for topic in set(xa) | set(xb):
                ta, tb = xa.get(topic) or {}, xb.get(topic) or {}
                parts |= {(topic, int(p)) for p in set(ta) | set(tb) if ta.get(p) != tb.get(p)}
    return _closed(after, before, parts, txns)


def _closed(after: RunImage, before: RunImage, parts: set, txns: set) -> Scope:
    """Every partition of a transaction with a send in the scope, until nothing is added:
    a torn transaction is judged on all its partitions at once."""
    where: dict[tuple, set] = {}
    for img in (before, after):
        for pid, lines in img.histories.items():
            spec = img.config["producers"].get(pid)
            if spec is None:
                continue
            for x in lines:
                if x.get("f") == "send" and x.get("txn") is not None and x.get("p") is not None:
                    where.setdefault((pid, x.get("ses"), x["txn"]), set()).add(
                        (spec["topic"], x["p"]))
    while True:
        grown = {k for k, ps in where.items() if k in txns or ps & parts}
        more = set().union(*(where[k] for k in grown)) if grown else set()
        if grown <= txns and more <= parts:
            return Scope(frozenset(parts), frozenset(txns))
        txns |= grown
        parts |= more


@dataclass
class ScopedRun:
    """One side (the run, or its mutated copy) restricted to a scope: what the checks and
    the live path read, as Arrow."""

    run: RunData  # the batch checks' input (local.anomaly_rows): drain cut to the scope
    observer: dict[str, pa.Table]  # the Spark observer's rows per level, in file order


def restrict(img: RunImage, scope: Scope, meta) -> ScopedRun:
    """``img`` cut to ``scope``: observation rows of its partitions, the histories' sends
    homed there and every transaction operation, drain.json's end offsets of its
    partitions (its completion and what was behind kept whole). ``meta``: the run's
    nemesis, start failures (``checks.load.RunFiles``)."""
    from verifier.judge.checks.load import OBSERVATION_COLUMNS, config_of, load_drain
    from verifier.rundata.plan import plan_from_json

    config = config_of(plan_from_json(img.config))
    with tempfile.TemporaryDirectory(prefix="verifier-scope-") as tmp:
        drn = Path(tmp) / "drain.json"
        drn.write_bytes(orjson.dumps(img.drain))
        drain = load_drain(drn)
    keys = pa.array([f"{t}\x00{p}" for t, p in sorted(scope.parts, key=str)], pa.string())

    def cut(t: pa.Table) -> pa.Table:
        k = pc.binary_join_element_wise(t["topic"], pc.cast(t["partition"], pa.string()), "\x00")
        return t.filter(pc.is_in(k, value_set=keys))

    schema = pa.schema([(c, _ARROW[t]) for c, t in OBSERVATION_COLUMNS.items()])
    obs = [cut(t).select(list(OBSERVATION_COLUMNS)).cast(schema) for t in img.obs.values()]
    tables, started = [], {}
    for pid, spec in config.producers.items():
        lines = img.histories.get(pid, [])
        started[pid] = any(x.get("type") == "session" for x in lines)
        ops = [x for x in lines if x.get("type") in _OPS and (
            x.get("f") != "send" or (spec.topic, x.get("p")) in scope.parts)]
        t = pa.Table.from_pylist(ops, HISTORY_SCHEMA)
        tables.append(t.append_column("pid", pa.repeat(pa.scalar(pid, pa.string()), t.num_rows)))
    cut_drain = Drain(drain.completed, [p for p in drain.partitions
                                        if (p["topic"], p["partition"]) in scope.parts],
                      drain.behind, drain.deadline_s)  # fmt: skip
    run = RunData(config=config, events=None, observations=pa.concat_tables(obs),
                  combos=list(img.combos), drain=cut_drain, drain_partitions=None,
                  started=started, start_failures=meta.start_failures, nemesis=meta.nemesis,
                  history=pa.concat_tables(tables))  # fmt: skip
    observer = {iso: cut(t) for (reader, iso), t in img.obs.items() if reader == OBSERVER}
    return ScopedRun(run, observer)


def whole_drain(img: RunImage) -> Drain:
    """drain.json of ``img`` as the verdict reads it (every partition)."""
    from verifier.judge.checks.load import load_drain

    with tempfile.TemporaryDirectory(prefix="verifier-scope-") as tmp:
        drn = Path(tmp) / "drain.json"
        drn.write_bytes(orjson.dumps(img.drain))
        return load_drain(drn)


def counted(rows: list[dict], run: RunData) -> Counter:
    """Anomaly rows per (kind, mode, isolation), as the analysis counts them."""
    from verifier.judge.selftest.local import mode_of

    return Counter((r["kind"], mode_of(run, r), r.get("isolation")) for r in rows)


def analyse_scoped(base, before: RunImage, after: RunImage, scope: Scope, meta):
    """The :class:`~verifier.judge.selftest.analysis.Analysis` of the copy ``after`` from the run's
    (``base``, of ``before``): the scope judged again on both sides without Spark, the
    difference applied to the run's rows and counts, the verdicts built from the merged
    counts with the copy's config and whole drain."""
    from verifier.judge import verdict as V
    from verifier.judge.checks.runner import CHECKS
    from verifier.judge.model import CheckOutcome, Group
    from verifier.judge.selftest import local
    from verifier.judge.selftest.analysis import Analysis, differ_text

    sides = [restrict(img, scope, meta) for img in (before, after)]
    crashed = list(base.crashed)
    try:
        found = [local.anomaly_rows(s.run) for s in sides]
    except Exception as exc:  # noqa: BLE001 - as a crashed check: every check of the scope
        crashed += [f"{name} ({type(exc).__name__}: {exc})" for name, _, _ in CHECKS]
        found = [[], []]
    was, now = (counted(rows, s.run) for rows, s in zip(found, sides, strict=True))
    counts = Counter(base.counts)
    for key in set(was) | set(now):
        counts[key] += now[key] - was[key]
    counts = Counter({k: n for k, n in counts.items() if n})
    run = sides[1].run
    rows = [r for r in base.rows if not scope.holds(r)]
    for r in found[1]:
        plain = {k: v for k, v in r.items() if v is not None and k not in ("check", "rec", "n")}
        plain["evidence"] = orjson.loads(plain["evidence"]) if plain.get("evidence") else {}
        rows.append({**plain, "mode": local.mode_of(run, r), "isolation": r.get("isolation")})
    whole = RunData(config=run.config, events=None, observations=None, combos=run.combos,
                    drain=whole_drain(after), drain_partitions=None, started=run.started,
                    start_failures=run.start_failures, nemesis=run.nemesis)  # fmt: skip
    outcomes = []
    for name, _, kinds in CHECKS:
        o = CheckOutcome(name, kinds, groups=[Group(k, m, i, n, []) for (k, m, i), n
                                              in sorted(counts.items(), key=str) if k in kinds])
        outcomes.append(o)
    doc = V.build(whole, outcomes, {}, cap=1)
    live = [live_rows(s) for s in sides]
    # the run's differences, changed by what changed in the scope (so a row the run's own
    # comparison treats otherwise, e.g. set aside, cancels out on both sides)
    differ: Counter = Counter()
    for x in base.live_differ_rows:
        differ[_differ_key(x)] += x.get("times", 1)
    for side, sign in zip(sides, (-1, 1), strict=True):
        i = 0 if sign < 0 else 1
        for x in live_vs_batch(side.run, found[i], *live[i]):
            differ[_differ_key(x)] += sign * x["times"]
    differ_rows = [{**dict(k), "times": n} for k, n in sorted(differ.items(), key=str) if n > 0]
    live_counts = Counter(base.live_counts)
    for (rows_, _), sign in zip(live, (-1, 1), strict=True):
        for r in rows_:
            live_counts[(r["kind"], r["isolation"])] += sign
    return Analysis(rows, counts, {c["name"]: c["verdict"] for c in doc["columns"]},
                    {c.name: c for c in V.columns_of(whole)}, crashed, run.config.sink,
                    V.fault_kinds(run.nemesis), [differ_text(x) for x in differ_rows],
                    live_counts, differ_rows)  # fmt: skip


def _differ_key(x: dict) -> tuple:
    return tuple((k, x.get(k)) for k in ("side", "kind", "isolation", "topic", "partition",
                                         "pid", "seq", "offset", "ses", "txn", "mode"))


def live_rows(side: ScopedRun) -> tuple[list[dict], bool]:
    """:func:`verifier.judge.selftest.analysis.live_rows` on a scope: the live checks replayed over
    the observer's rows there, then the remainder after the drain (both levels needed)."""
    from verifier.judge.definitions.stream import replay
    from verifier.judge.selftest.analysis import remainder_of

    cfg = side.run.config
    topics = {pid: p.topic for pid, p in cfg.producers.items()}
    found, states = [], {}
    for iso in sorted(side.observer):
        states[iso], rows = replay(side.observer[iso], cfg.run, iso, topics)
        found += rows
    if len(states) < 2:
        return found, False
    rest = remainder_of(side.run, side.run.history, states, side.observer)
    return found + rest.rows, True


def live_vs_batch(run: RunData, batch: list[dict], live: list[dict], whole: bool) -> list[dict]:
    """``checks.crosscheck.compare`` on a scope: the rows only one side has (its ``differ``
    rows, every one), the batch side being the Arrow pass's rows ``batch``."""
    import orjson as _json

    from verifier.judge.checks.crosscheck import KEY_FIELDS, REST_KINDS, _levels_differ
    from verifier.judge.definitions.stream import LIVE_KINDS
    from verifier.judge.definitions.stream_rest import same_anomaly_key
    from verifier.judge.model import ABORTED_READ, FOREIGN, HANGING, INCONSISTENT, LOST, UNSEEN

    kinds = {*LIVE_KINDS, FOREIGN, *((LOST, UNSEEN, *REST_KINDS) if whole else ())}
    theirs = Counter()
    for r in batch:
        if r["kind"] not in kinds:
            continue
        mine = OBSERVER in (r.get("reader") or "").split(",") or r["kind"] in (HANGING,
                                                                               INCONSISTENT)
        ev = _json.loads(r["evidence"]) if r.get("evidence") else {}
        if not mine or (r["kind"] == ABORTED_READ and not whole and ev.get("abort_intent")
                        is not True):  # fmt: skip
            continue
        if r["kind"] == INCONSISTENT and not _levels_differ(r.get("evidence")):
            continue
        theirs[same_anomaly_key({k: r.get(k) for k in (*KEY_FIELDS, "ses", "txn")})] += 1
    ours = Counter(same_anomaly_key({k: r.get(k) for k in (*KEY_FIELDS, "ses", "txn")})
                   for r in live)
    modes = {pid: p.mode for pid, p in run.config.producers.items()}
    by_topic = {p.topic: p.mode for p in run.config.producers.values()}
    differ = []
    for side, diff in (("live only", ours - theirs), ("batch only", theirs - ours)):
        for key, n in sorted(diff.items(), key=lambda kv: tuple(map(str, kv[0]))):
            kind, iso, topic, part, pid, seq, off = key
            row = {"side": side, "kind": kind, "isolation": iso, "topic": topic,
                   "partition": part, "pid": pid, "seq": seq, "offset": off,
                   "times": n, "mode": modes.get(pid) or by_topic.get(topic)}
            if kind == TORN:
                row.update(seq=None, offset=None, txn=seq, ses=off)
            differ.append(row)
    return differ
