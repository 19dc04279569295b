"""The batch checks without Spark, on Arrow tables: a self-test copy's scope, a test's run.

The definitions are pure (verifier.judge.definitions: one pass per (topic, partition) in
Arrow, and the rules torn / hanging / undecodable as plain functions); the batch checks
(verifier.judge.checks) run them behind one Spark shuffle. This module runs the same
functions on the same inputs in plain Arrow and reduces the rows as
``checks.runner.run_checks`` does (counts and a sample per check, kind, mode and
isolation, in the runner's order). What it replaces is only Spark's plumbing: the shuffle
(a group by (topic, partition)), the torn check's sums over partitions and two filters
(hanging partitions, rows that do not decode).

Two users: the self-test judges the few partitions a mutation touched with it (a Spark
analysis per copy cost seconds of job overhead, whatever the size of the change;
:mod:`verifier.judge.selftest.scope`), and the unit tier judges its hand-written runs with
it (no JVM). Both are held to the Spark pass: the whole-run analysis of every copy gives
the same self-test table (tests/integration/judge/test_selftest_runs.py), and every
hand-written case runs through Spark too (tests/integration/judge/test_batch_pass.py).

``run``: a :class:`~verifier.judge.model.RunData` whose ``observations`` is an Arrow
table of the observation columns (``checks.load.OBSERVATION_COLUMNS``, with reader and
isolation) and ``history`` the operations (``rundata.history.read_histories``).
"""

from __future__ import annotations

from collections import defaultdict

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.checks import history as H
from verifier.judge.checks.derive import OBS_SCHEMA
from verifier.judge.checks.runner import BUCKET_MS, CHECKS
from verifier.judge.definitions import kinds, rules
from verifier.judge.definitions.frames import Ctx
from verifier.judge.model import (
    FOREIGN,
    HANGING,
    READ_COMMITTED,
    TORN,
    CheckOutcome,
    Group,
    RunData,
)  # fmt: skip

UNKNOWN_ERROR = "run or producer unknown to this run"  # checks.log.check_foreign's text


def _foreign(obs: pa.Table, run: RunData) -> pa.ChunkedArray:
    """``checks.derive.foreign_expr``: does not decode, another run, no producer of ours."""
    pids = pa.array(list(run.config.producers), pa.string())
    other_run = pc.fill_null(pc.not_equal(obs["run"], run.config.run), True)
    no_pid = pc.invert(pc.fill_null(pc.is_in(obs["pid"], value_set=pids), False))
    return pc.or_(pc.or_(pc.fill_null(obs["foreign"], False), other_run), no_pid)


def _status(history: pa.Table, obs: pa.Table, fgn: pa.ChunkedArray) -> pa.Table:
    """``Derived.status``: commits of unknown outcome count as committed when a
    read_committed reader saw one of their records."""
    flags = H.txn_flags(history)
    unknown = H.unknown_commits(flags)
    seen: set[tuple] = set()
    if unknown.num_rows:
        wanted = set(zip(*(unknown[k].to_pylist() for k in H.TXN_KEYS), strict=True))
        rc = obs.filter(pc.and_(pc.equal(obs["isolation"], READ_COMMITTED), pc.invert(fgn)))
        seen = {k for k in zip(*(rc[k].to_pylist() for k in H.TXN_KEYS), strict=True)
                if k in wanted}  # fmt: skip
    return H.txn_status(flags, seen)


def _by_partition(t: pa.Table) -> dict[tuple, pa.Table]:
    keys = sorted(set(zip(t["topic"].to_pylist(), t["partition"].to_pylist(), strict=True)),
                  key=str)  # fmt: skip
    return {(tp, p): t.filter(pc.and_(pc.equal(t["topic"], tp), pc.equal(t["partition"], p)))
            for tp, p in keys}  # fmt: skip


def anomaly_rows(run: RunData) -> list[dict]:
    """Every anomaly of every check, as rows with the check's name (key ``check``)."""
    obs: pa.Table = run.observations
    history = run.history
    fgn = _foreign(obs, run)
    status = _status(history, obs, fgn)
    topics = {p.pid: p.topic for p in run.config.producers.values()}
    ctx = Ctx(combos=list(run.combos), drain=run.drain, status=status,
              pids=sorted(run.config.producers), topics=topics)  # fmt: skip
    attempts = H.attempts(history)
    sends = H.sends(attempts, status, topics)
    index = {c: k for k, c in enumerate(run.combos)}
    ci = pa.array([index.get(c) for c in zip(obs["reader"].to_pylist(),
                                             obs["isolation"].to_pylist(), strict=True)],
                  pa.int32())  # fmt: skip
    known = pc.is_in(obs["pid"], value_set=pa.array(ctx.pids, pa.string()))
    made = {"ci": ci, "fgn": fgn, "pid": pc.if_else(known, obs["pid"], None)}
    pas = pa.table({n: made[n] if n in made else obs[n] for n in OBS_SCHEMA.names}
                   ).cast(OBS_SCHEMA)  # the pass's columns (derive.PASS_COLUMNS)
    obs_at, sends_at = _by_partition(pas), _by_partition(sends)
    out = []
    for topic, part in sorted(set(obs_at) | set(sends_at), key=str):
        o = obs_at.get((topic, part), pas.slice(0, 0))
        s = sends_at.get((topic, part), sends.slice(0, 0))
        out += kinds.run_pass(ctx, topic, part, o, s).to_pylist()
    rows = []
    for name, _, kinds_of in CHECKS:
        rows += [{**r, "check": name} for r in out if r["rec"] == "a" and r["kind"] in kinds_of]
    rows += [{**r, "check": "torn-transaction"}
             for r in _torn(run, [r for r in out if r["rec"] == "v"], attempts, status)]
    rows += [{**r, "check": "hanging-transaction"} for r in _hanging(run)]
    rows += [{**r, "check": "foreign-record"} for r in _undecoded(obs.filter(fgn), run)]
    return rows


def _torn(run: RunData, visible: list[dict], attempts, status) -> list[dict]:
    """``checks.txn.check_torn``: per committed transaction and (reader, isolation), the
    records seen summed over its partitions, against its size."""
    sums: dict[tuple, list[int]] = {}
    topic_of: dict[tuple, str] = {}
    for v in visible:
        key = (v["pid"], v["ses"], v["txn"])
        acc = sums.setdefault(key, [0] * len(run.combos))
        topic_of.setdefault(key, v["topic"])
        for k, n in enumerate(v["n"]):
            acc[k] += n or 0
    out = []
    for t in H.txn_sizes(attempts, status).to_pylist():
        key = (t["pid"], t["ses"], t["txn"])
        if key not in sums:
            continue
        for k, (reader, iso) in enumerate(run.combos):
            n = sums[key][k]
            if rules.torn(t["size"], n):
                out.append({"kind": TORN, "topic": topic_of[key], "isolation": iso,
                            "reader": reader, "pid": t["pid"], "ses": t["ses"],
                            "txn": t["txn"], "t": t["t"],
                            "evidence": kinds._ev(records=t["size"], visible=n,
                                                  partitions=t["partitions"])})  # fmt: skip
    return out


def _hanging(run: RunData) -> list[dict]:
    """``checks.txn.check_hanging`` on drain.json's end offsets."""
    return [{"kind": HANGING, "topic": p["topic"], "partition": p["partition"],
             "offset": p["end_read_committed"],
             "offsets": [p["end_read_committed"], p["end_read_uncommitted"]],
             "evidence": kinds._ev(end_read_committed=p["end_read_committed"],
                                   end_read_uncommitted=p["end_read_uncommitted"])}
            for p in run.drain.partitions
            if rules.hanging(p["end_read_committed"], p["end_read_uncommitted"])]  # fmt: skip


def _undecoded(rows: pa.Table, run: RunData) -> list[dict]:
    """``checks.log.check_foreign``'s first half: rows that do not decode, name another
    run or no producer of this run."""
    return [{"kind": FOREIGN, "topic": r["topic"], "partition": r["partition"],
             "isolation": r["isolation"], "reader": r["reader"], "pid": r["pid"],
             "seq": r["seq"], "offset": r["offset"], "offsets": [r["offset"]],
             "t": r["ts_broker"],
             "evidence": kinds._ev(error=r["error"] or UNKNOWN_ERROR, run=r["run"])}
            for r in rows.to_pylist()]  # fmt: skip


def mode_of(run: RunData, row: dict) -> str:
    """``checks.runner.owner``: the mode by producer id, else by topic."""
    prods = run.config.producers.values()
    by_pid = {p.pid: p.mode for p in prods}
    by_topic = {p.topic: p.mode for p in prods}
    return by_pid.get(row.get("pid")) or by_topic.get(row.get("topic")) or "(unattributed)"


def _order(row: dict) -> tuple:
    """The sample's order (topic, partition, offset, pid, seq, txn), nulls first as Spark's."""
    return tuple((v is not None, v) for v in (row.get(k) for k in (
        "topic", "partition", "offset", "pid", "seq", "txn")))


def run_checks(run: RunData, cap: int = 20, only: set[str] | None = None) -> list[CheckOutcome]:
    """``checks.run_checks`` without Spark: an outcome per check (or those in ``only``)."""
    return outcomes(run, anomaly_rows(run), cap, only)


def outcomes(run: RunData, rows: list[dict], cap: int = 20,
             only: set[str] | None = None) -> list[CheckOutcome]:
    """Anomaly rows (with their ``check``) reduced to an outcome per check."""
    groups: dict[tuple, Group] = {}
    per_check: dict[str, list[Group]] = defaultdict(list)
    for row in sorted(rows, key=_order):
        key = (row["check"], row["kind"], mode_of(run, row), row.get("isolation"))
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(*key[1:], 0, [])
            per_check[row["check"]].append(g)
        g.count += 1
        if len(g.sample) < cap:
            plain = {k: v for k, v in row.items()
                     if v is not None and k not in ("check", "kind", "rec", "n")}
            plain["evidence"] = orjson.loads(plain["evidence"]) if plain.get("evidence") else {}
            g.sample.append(plain)
        if row.get("t") is not None:
            bucket = row["t"] // BUCKET_MS * BUCKET_MS
            if g.timeline and g.timeline[-1][0] == bucket:
                g.timeline[-1] = (bucket, g.timeline[-1][1] + 1)
            else:
                g.timeline.append((bucket, 1))
    out = []
    for name, _, kinds_of in CHECKS:
        if only is None or name in only:
            o = CheckOutcome(name, kinds_of, groups=per_check.get(name, []))
            for g in o.groups:
                merged: dict[int, int] = defaultdict(int)
                for b, n in g.timeline:
                    merged[b] += n
                g.timeline = sorted(merged.items())
            out.append(o)
    return out
