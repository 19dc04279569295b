"""Mutation test: a clean run reports nothing unexpected; every injected anomaly is found
with the right kind and location.

The clean run (tests/data/clean_run) is synthetic, written by tests/data/make_clean_run.py
until a real recorded run replaces it. Injections edit the loaded DataFrames, so no files
are rewritten.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from verifier.judge.checks import load_run, run_checks
from verifier.judge.model import Drain

CLEAN = Path(__file__).resolve().parents[2] / "data" / "clean_run"
TXN, ALO, IDEM, AMO = "t-transactional", "t-at-least-once", "t-idempotent", "t-at-most-once"


@pytest.fixture(scope="module")
def clean(spark):
    return load_run(spark, CLEAN)


def _at(topic, p, off, reader=None, iso=None):
    c = (F.col("topic") == topic) & (F.col("partition") == p) & (F.col("offset") == off)
    if reader:
        c = c & (F.col("reader") == reader)
    if iso:
        c = c & (F.col("isolation") == iso)
    return c


def _found(outcomes) -> dict[str, list[dict]]:
    assert all(o.error is None for o in outcomes), [o.error for o in outcomes if o.error]
    found: dict[str, list[dict]] = {}
    for o in outcomes:
        for g in o.groups:
            found.setdefault(g.kind, []).extend({**s, "mode": g.mode} for s in g.sample)
    return found


def test_clean_run_reports_only_expected_aborted_reads(clean):
    found = _found(run_checks(clean, cap=100))
    assert set(found) == {"aborted-read"}, found
    # the two aborted transactions (4 records each), visible only at read_uncommitted
    assert {a["isolation"] for a in found["aborted-read"]} == {"read_uncommitted"}
    assert len({(a["partition"], a["offset"]) for a in found["aborted-read"]}) == 8


def _inject(run):
    """Every injection at its own place; returns the mutated run."""
    o = run.observations
    dup = o.where(_at(IDEM, 0, 2)).withColumn("offset", F.lit(50).cast("long"))
    cross = (o.where(_at(ALO, 1, 5)).withColumn("offset", F.lit(60).cast("long"))
             .withColumn("ses", F.lit(2)))  # fmt: skip
    swap = (F.when(_at(IDEM, 1, 8), F.lit(9)).when(_at(IDEM, 1, 9), F.lit(8))
            .otherwise(F.col("offset")).cast("long"))  # fmt: skip
    leak = o.where(_at(TXN, 0, 6, "spark", "read_uncommitted")).withColumn(
        "isolation", F.lit("read_committed")
    )
    twice = o.where(_at(AMO, 0, 1, "spark", "read_committed"))
    alien = (o.where(_at(AMO, 1, 0, "plain", "read_committed"))
             .withColumn("offset", F.lit(40).cast("long")).withColumn("foreign", F.lit(True))
             .withColumn("error", F.lit("not JSON: injected")))  # fmt: skip
    ts = F.when(_at(AMO, 0, 5, "plain", "read_uncommitted"), F.col("ts_send") + 1000).otherwise(
        F.col("ts_send")
    )
    o = (o.where(~_at(ALO, 0, 3))  # drop a record everywhere
         .where(~_at(TXN, 1, 0, "plain", "read_committed"))  # half a committed txn
         .withColumn("offset", swap).withColumn("ts_send", ts)
         .unionByName(dup).unionByName(cross).unionByName(leak).unionByName(twice)
         .unionByName(alien))  # fmt: skip
    rc = F.when(
        (F.col("topic") == TXN) & (F.col("partition") == 1), F.col("end_read_committed") - 3
    ).otherwise(F.col("end_read_committed"))
    drain = run.drain_partitions.withColumn("end_read_committed", rc)
    return dataclasses.replace(run, observations=o, drain_partitions=drain)


#: kind -> (mode, partition, a predicate on the sample) for every injection
EXPECTED = {
    "lost": [("at-least-once", 0, lambda a: a["seq"] == 3 and a["evidence"]["in_log"] is False),
             ("transactional", 1, lambda a: a["seq"] == 0 and a["reader"] == "plain")],
    "duplicate-same-session": [
        ("idempotent", 0, lambda a: a["seq"] == 2 and a["offsets"] == [2, 50])],
    "duplicate-cross-session": [
        ("at-least-once", 1, lambda a: a["seq"] == 5 and a["offsets"] == [5, 60])],
    "reorder": [("idempotent", 1, lambda a: a["seq"] == 8 and a["offset"] == 9)],
    "aborted-read": [("transactional", 0,
                      lambda a: a["offset"] == 6 and a["isolation"] == "read_committed")],
    "torn-transaction": [
        ("transactional", None, lambda a: a["txn"] == 0 and a["reader"] == "plain")],
    "duplicate-delivery": [
        ("at-most-once", 0, lambda a: a["offset"] == 1 and a["reader"] == "spark")],
    "inconsistent-offset": [("at-most-once", 0, lambda a: a["offset"] == 5)],
    "foreign-record": [("at-most-once", 1, lambda a: a["offset"] == 40)],
    "hanging-transaction": [("transactional", 1, lambda a: a["offsets"][1] - a["offsets"][0] == 3)],
}  # fmt: skip


def test_every_injected_anomaly_is_found_where_it_was_injected(clean):
    found = _found(run_checks(_inject(clean), cap=200))
    assert set(found) == set(EXPECTED), sorted(found)
    for kind, wanted in EXPECTED.items():
        for mode, part, pred in wanted:
            hits = [a for a in found[kind] if a["mode"] == mode and pred(a)
                    and (part is None or a.get("partition") == part)]  # fmt: skip
            assert hits, f"{kind} in {mode}[{part}] not found among {found[kind]}"
    # nothing beyond the injections (the clean run's aborted reads are read_uncommitted)
    assert len(found["lost"]) == 3  # seq 3 at both levels, the torn txn's record at rc
    assert [a for a in found["aborted-read"] if a["isolation"] == "read_committed"] == [
        a for a in found["aborted-read"] if a["offset"] == 6 and a["isolation"] == "read_committed"
    ]


def test_dropped_record_after_incomplete_drain_is_unseen(clean):
    run = dataclasses.replace(
        clean,
        observations=clean.observations.where(~_at(ALO, 0, 3)),
        drain=Drain(completed=False, behind=[{"topic": ALO, "partition": 0}]),
    )
    (out,) = run_checks(run, only={"lost"}, cap=50)
    kinds = {(g.kind, g.mode) for g in out.groups}
    assert kinds == {("unseen", "at-least-once")}
