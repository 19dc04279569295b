"""Run every check, capture crashes, and reduce each result to counts plus a sample.

The runner is the only place that executes Spark jobs on the checks' frames. A check
that raises (while building its plan or while Spark runs it) becomes a
:class:`CheckOutcome` with its traceback: the verdict turns the modes it concerns to
UNKNOWN instead of the run crashing.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from functools import reduce

import orjson
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from verifier.judge.checks import delivery, log, txn
from verifier.judge.checks.derive import Derived
from verifier.judge.model import (
    ABORTED_READ,
    ANOMALY_COLUMNS,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    FOREIGN,
    HANGING,
    INCONSISTENT,
    LOST,
    REORDER,
    TORN,
    UNSEEN,
    CheckOutcome,
    Group,
    RunData,
)  # fmt: skip

#: (check name, function, anomaly kinds it can report), in the order they run
CHECKS: tuple[tuple[str, Callable[[Derived], DataFrame], tuple[str, ...]], ...] = (
    ("lost", delivery.check_lost, (LOST, UNSEEN)),
    ("duplicate-log", log.check_duplicates_log, (DUP_SAME, DUP_CROSS)),
    ("duplicate-delivery", log.check_duplicates_delivery, (DUP_DELIVERY,)),
    ("reorder", log.check_reorder, (REORDER,)),
    ("aborted-read", txn.check_aborted_read, (ABORTED_READ,)),
    ("torn-transaction", txn.check_torn, (TORN,)),
    ("hanging-transaction", txn.check_hanging, (HANGING,)),
    ("inconsistent-offset", log.check_inconsistent_offsets, (INCONSISTENT,)),
    ("foreign-record", log.check_foreign, (FOREIGN,)),
)

DEFAULT_SAMPLE = 20
BUCKET_MS = 1000  # timeline resolution; the report re-bins to its width


def owner(run: RunData):
    """Column naming the mode an anomaly belongs to: by producer id, else by topic."""
    prods = run.config.producers.values()
    by_pid = F.create_map(*[x for p in prods for x in (F.lit(p.pid), F.lit(p.mode))])
    by_topic = F.create_map(*[x for t, m in {(p.topic, p.mode) for p in prods}
                              for x in (F.lit(t), F.lit(m))])  # fmt: skip
    return F.coalesce(
        F.try_element_at(by_pid, F.col("pid")),
        F.try_element_at(by_topic, F.col("topic")),
        F.lit("(unattributed)"),
    )


def _tagged(run: RunData, anomalies: DataFrame, check: str) -> DataFrame:
    return anomalies.withColumn("mode", owner(run)).withColumn("check", F.lit(check))


def summarize_many(run: RunData, frames: dict[str, DataFrame], cap: int) -> dict[str, list[Group]]:
    """Per check: counts per (kind, mode, isolation), the first ``cap`` anomalies of each
    and the timeline, for all checks at once: two Spark jobs, whatever the number."""
    keys = ["check", "kind", "mode", "isolation"]
    tagged = reduce(DataFrame.unionByName, [_tagged(run, f, c) for c, f in frames.items()])
    # both jobs below read the anomalies: compute the union once (it is small; without
    # this each job re-ran every check's plan, re-scanning the observations), in one
    # partition: the union has a partition per input partition of every check (18 for a
    # 4-mode run) and each job paid a task per partition, 3x the time of the work itself
    tagged = tagged.repartition(1).persist()
    try:
        bucket = (F.floor(F.col("t") / BUCKET_MS) * BUCKET_MS).cast("long").alias("b")
        hist = tagged.groupBy(*keys, bucket).count().collect()
        order = Window.partitionBy(*keys).orderBy("topic", "partition", "offset", "pid", "seq",
                                                  "txn")
        cols = [c for c, _ in ANOMALY_COLUMNS if c != "kind"]
        first = (tagged.withColumn("rn", F.row_number().over(order)).where(F.col("rn") <= cap)
                 .select(*keys, "rn", F.struct(*cols).alias("row")).collect())  # fmt: skip
    finally:
        tagged.unpersist()
    groups: dict[tuple, Group] = {}
    for r in hist:
        g = groups.setdefault(tuple(r[k] for k in keys), Group(*[r[k] for k in keys[1:]], 0, []))
        g.count += r["count"]
        if r["b"] is not None:
            g.timeline.append((r["b"], r["count"]))
    for r in sorted(first, key=lambda r: r["rn"]):
        groups[tuple(r[k] for k in keys)].sample.append(_plain(r["row"]))
    out: dict[str, list[Group]] = {c: [] for c in frames}
    for key, g in groups.items():
        g.timeline.sort()
        out[key[0]].append(g)
    return out


def summarize(run: RunData, anomalies: DataFrame, cap: int) -> list[Group]:
    """Counts per (kind, mode, isolation) and the first ``cap`` anomalies of each."""
    return summarize_many(run, {"_": anomalies}, cap)["_"]


def _plain(row) -> dict:
    d = row.asDict(recursive=True)
    d["evidence"] = orjson.loads(d["evidence"]) if d.get("evidence") else {}
    return {k: v for k, v in d.items() if v is not None}


def run_checks(
    run: RunData,
    derived: Derived | None = None,
    cap: int = DEFAULT_SAMPLE,
    only: set[str] | None = None,
) -> list[CheckOutcome]:
    """Run every check (or those named in ``only``); never raises for a check's failure.

    All checks are summarized together (the shared pass runs once); if that fails, each
    check is summarized alone so that only the checks that crash are UNKNOWN.
    """
    d = derived or Derived(run)
    outcomes, frames = [], {}
    try:
        for name, fn, kinds in CHECKS:
            if only is None or name in only:
                out = CheckOutcome(name, kinds)
                outcomes.append(out)
                _guard(out, lambda fn=fn, name=name: frames.__setitem__(name, fn(d)))
        start = time.perf_counter()
        try:
            found = summarize_many(run, frames, cap) if frames else {}
        except Exception:  # noqa: BLE001 - isolate the crashing check(s) below
            found = None
        share = (time.perf_counter() - start) / max(1, len(frames))
        for out in outcomes:
            if out.name not in frames:
                continue
            if found is not None:
                out.groups, out.seconds = found[out.name], out.seconds + share
            else:
                _guard(out, lambda out=out: setattr(
                    out, "groups", summarize(run, frames[out.name], cap)))  # fmt: skip
    finally:
        if derived is None:
            d.release()
    return outcomes


def _guard(out: CheckOutcome, step: Callable[[], None]) -> None:
    """Run one step of a check; a crash becomes its traceback and summary."""
    start = time.perf_counter()
    try:
        step()
    except Exception as exc:  # noqa: BLE001 - a crashed check is UNKNOWN, not a crash
        out.error = traceback.format_exc()
        first = (str(exc).strip().splitlines() or [""])[0]
        out.summary = f"{type(exc).__name__}: {first}"[:300]
    out.seconds += time.perf_counter() - start
