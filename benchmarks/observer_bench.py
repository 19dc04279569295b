"""Observer benchmark: throughput per isolation level and end-to-end lag (a script, not a test).

Two phases against one observer process (the real one, ``python -m streaming.observer``):

1. **catch-up**: a backlog written before the observer starts; the rate at which each
   query works it off is the observer's capacity (records/s per isolation level).
2. **live**: a kafka-python producer loop at full rate for ``--duration`` seconds while the
   observer runs; end-to-end lag = ``observed_at - ts_send`` (send time in the record to
   the moment the sink wrote the row), p50/p99 per isolation level, and the p50 per
   fifth of the run, to show whether lag grows.

    .venv/bin/python benchmarks/observer_bench.py [--bootstrap-servers BS] [--duration 60]

Without ``--bootstrap-servers`` it starts (and stops) its own 1-node cluster; with it,
its topic is deleted at the end.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kafka import KafkaProducer

from streaming.observations import read_observations
from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics, delete_topics
from verifier.orchestration.drain import drain
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.records import RecordIdentity, encode_value

LEVELS = ("read_committed", "read_uncommitted")


def produce(bs: str, topic: str, run_id: str, partitions: int, size: int, seconds: float,
            count: int | None = None, first_seq: int = 0) -> tuple[int, float]:
    """Send at full rate for ``seconds`` (or ``count`` records); return (sent, elapsed)."""
    producer = KafkaProducer(bootstrap_servers=bs, acks=1, linger_ms=5,
                             batch_size=128 * 1024)
    start = time.monotonic()
    n = 0
    while (count is None and time.monotonic() - start < seconds) or (count and n < count):
        p, seq = n % partitions, first_seq + n // partitions
        rid = RecordIdentity(run_id, "bench-0", 1, p, seq, None, False, int(time.time() * 1000))
        producer.send(topic, encode_value(rid, size), partition=p)
        n += 1
    producer.flush()
    producer.close()
    return n, time.monotonic() - start


def pct(values: list[int], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def capacity(run_dir: Path, iso: str, backlog_batches: set[int]) -> float:
    """Rows/s over the backlog batches after the first (their write times bound the work)."""
    per = (read_observations(run_dir, "spark", iso).select(["batch", "observed_at"])
           .group_by("batch").aggregate([("observed_at", "max"), ("observed_at", "count")])
           .to_pylist())
    by_batch = {r["batch"]: (r["observed_at_max"], r["observed_at_count"]) for r in per
                if r["batch"] in backlog_batches}
    ids = sorted(by_batch)
    if len(ids) < 2:
        return float("nan")
    rows = sum(by_batch[b][1] for b in ids[1:])
    return rows / max(1e-3, (by_batch[ids[-1]][0] - by_batch[ids[0]][0]) / 1000)


def lag_report(run_dir: Path, iso: str, live_from_seq: int) -> dict:
    t = [r for r in read_observations(run_dir, "spark", iso).to_pylist()
         if r["seq"] is not None and r["seq"] >= live_from_seq]
    t.sort(key=lambda r: r["ts_send"])
    lags = [r["observed_at"] - r["ts_send"] for r in t]
    fifths = [lags[i * len(lags) // 5:(i + 1) * len(lags) // 5] for i in range(5)]
    span = (t[-1]["ts_send"] - t[0]["ts_send"]) / 1000 if t else 0
    return {"rows": len(t), "rate": len(t) / span if span else float("nan"),
            "p50": pct(lags, 0.5), "p99": pct(lags, 0.99), "max": max(lags, default=0),
            "p50_by_fifth": [statistics.median(f) if f else float("nan") for f in fifths]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap-servers")
    ap.add_argument("--base-port", type=int, default=23600)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--backlog", type=int, default=300_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--record-size", type=int, default=200)
    ap.add_argument("--sink", default="exactly-once")
    ap.add_argument("--trigger-ms", type=int, default=500)
    args = ap.parse_args()

    cluster = None
    if not args.bootstrap_servers:
        state = PROJECT_ROOT / ".state" / f"bench-{args.base_port}"
        cluster, _ = up(state, ClusterSpec(nodes=1, base_port=args.base_port))
    bs = args.bootstrap_servers or cluster.bootstrap_servers
    run_dir = Path(tempfile.mkdtemp(prefix="observer-bench-"))
    run_id, topic = f"bench-{uuid.uuid4().hex[:6]}", f"t-bench-{uuid.uuid4().hex[:6]}"
    proc = None
    try:
        create_topics(bs, {topic: args.partitions}, replication_factor=1)
        sent, secs = produce(bs, topic, run_id, args.partitions, args.record_size, 0,
                             count=args.backlog)
        print(f"backlog: {sent} records in {secs:.1f}s ({sent / secs:,.0f}/s producer)")
        proc = ManagedProcess("observer", [
            sys.executable, "-m", "streaming.observer", "--run-dir", str(run_dir),
            "--bootstrap-servers", bs, "--topics", topic, "--run-id", run_id,
            "--sink", args.sink, "--trigger-ms", str(args.trigger_ms),
            "--max-offsets-per-trigger", "50000"], run_dir / "observer.log", cwd=PROJECT_ROOT)
        t0 = time.monotonic()
        proc.start()
        drain(bs, [topic], run_dir, timeout=600)
        print(f"catch-up: backlog observed at both levels {time.monotonic() - t0:.1f}s "
              "after the observer process started (incl. ~10 s Spark start)")
        backlog_batches = {iso: {r for r in read_observations(run_dir, "spark", iso)
                                 .column("batch").to_pylist()} for iso in LEVELS}
        for iso in LEVELS:
            print(f"  {iso:17s} capacity {capacity(run_dir, iso, backlog_batches[iso]):>10,.0f}"
                  " records/s (backlog batches after the first)")
        first_live = args.backlog // args.partitions + 1
        sent, secs = produce(bs, topic, run_id, args.partitions, args.record_size,
                             args.duration, first_seq=first_live)
        print(f"live: {sent} records in {secs:.1f}s ({sent / secs:,.0f}/s producer, full rate)")
        t1 = time.monotonic()
        drain(bs, [topic], run_dir, timeout=600)
        print(f"  drained {time.monotonic() - t1:.1f}s after the producer stopped")
        for iso in LEVELS:
            r = lag_report(run_dir, iso, first_live)
            trend = " ".join(f"{x:,.0f}" for x in r["p50_by_fifth"])
            print(f"  {iso:17s} {r['rows']:>9,} rows  {r['rate']:>8,.0f}/s  lag p50 "
                  f"{r['p50']:,.0f} ms  p99 {r['p99']:,.0f} ms  max {r['max']:,.0f} ms  "
                  f"p50 by fifth of the run: {trend} ms")
    finally:
        if proc is not None and proc.alive:
            proc.terminate(60)
        if cluster is not None:
            cluster.down()
        else:  # the user's cluster keeps nothing of the benchmark
            delete_topics(bs, [topic])
    return 0


if __name__ == "__main__":
    sys.exit(main())
