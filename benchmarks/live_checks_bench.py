"""Live checks benchmark: the observer with its checks on against off, side by side in one
run (a script, not a test; it prints ratios, it asserts nothing).

On one backlog (``--backlog`` records of one producer over ``--partitions`` partitions,
with same-session duplicates every ``--dup-every`` records so the record-by-record path
runs too) the real observer (``python -m streaming.observer``) catches up from the earliest
offsets, once per round with ``--live-checks off`` and once with ``on``, in alternating
order, each with a fresh run folder and checkpoint. Per isolation level it prints:

- capacity: rows/s over the backlog's batches after the first (their write times);
- the live checks' own time per batch (the sink's log) and per record;
- the state at the end (ranges held), the observer process's peak resident memory;
- the live result at the drain: reading the anomalies and the final state
  (``streaming.live.final``) for the comparison, against its count of anomalies.

The last line is the ratio the issue sets (checks-on capacity / checks-off, target >= 0.8).

With ``--baseline DIR`` (a copy of the project at another commit, e.g. ``git archive
COMMIT | tar -x -C DIR``) the rounds compare instead that tree's observer with this one's,
both with the live checks ``--baseline-checks`` (default on), and print this/baseline
per isolation level: a change to the observer measured side by side in one run.

Then ``--stateful`` runs the shape a Spark stateful operator keyed by (topic, partition)
would have (a streaming aggregation of the same rows by topic and partition, state in the
state store, then a no-op foreachBatch) against a plain no-op foreachBatch, on the same
backlog: what Spark's state store and shuffle cost per batch before any check runs.

    .venv/bin/python benchmarks/live_checks_bench.py --base-port 26700 \\
        --state-dir .state/h16-chaos [--backlog 300000] [--rounds 2] [--stateful]
        [--baseline DIR [--baseline-checks on|off]] [--max-offsets 50000]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pyarrow.compute as pc
from kafka import KafkaProducer
from observer_bench import LEVELS, capacity  # beside this script

from streaming.live import final
from streaming.observations import output_dir, read_observations
from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics
from verifier.orchestration.drain import drain
from verifier.rundata.jvm import PROJECT_ROOT, jars_root
from verifier.rundata.records import RecordIdentity, encode_value

PID = "bench-0"
_LIVE = re.compile(r"(read_\w+) batch (\d+): (\d+) rows; live checks (\d+) ms")


def backlog(bs: str, topic: str, run_id: str, partitions: int, count: int, size: int,
            dup_every: int) -> int:
    """``count`` records, sequences dense per partition; every ``dup_every``-th is sent
    twice (a same-session duplicate, as a retried batch writes it)."""
    producer = KafkaProducer(bootstrap_servers=bs, acks=1, linger_ms=5, batch_size=128 * 1024)
    sent = 0
    for n in range(count):
        p, seq = n % partitions, n // partitions
        rid = RecordIdentity(run_id, PID, 1, p, seq, None, False, int(time.time() * 1000))
        value = encode_value(rid, size)
        for _ in range(2 if dup_every and n % dup_every == 0 else 1):
            producer.send(topic, value, partition=p)
            sent += 1
    producer.flush()
    producer.close()
    return sent


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its descendants (the
    observer's driver and its Spark JVM)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        child = int(stat.parent.name)
        parent[child] = int(fields[1])
        cpu[child] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo += [c for c, pp in parent.items() if pp == p and c not in tree]
    return sum(cpu.get(p, 0.0) for p in tree)


def _first_batches_cpu(run_dir: Path, pid: int, stop: threading.Event, out: dict) -> None:
    """Note the observer's CPU time once both levels have written their first batch (the
    start-up and the JVM's warm-up are before it)."""
    while not stop.wait(0.1):
        if all(any(output_dir(run_dir, "spark", iso).glob("batch-0000000000*.parquet"))
               for iso in LEVELS):
            out["cpu_s"] = tree_cpu_s(pid)
            return


def observe(bs: str, topic: str, run_id: str, checks: str, args,
            tree: Path = PROJECT_ROOT) -> dict:
    """One observer catch-up over the backlog (the observer of the project in ``tree``);
    its figures per isolation level."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"live-bench-{checks}-"))
    argv = [sys.executable, "-m", "streaming.observer", "--run-dir", str(run_dir),
            "--bootstrap-servers", bs, "--topics", topic, "--run-id", run_id,
            "--sink", "exactly-once", "--trigger-ms", "500", "--live-checks", checks,
            "--live-producers", f"{PID}={topic}",
            "--max-offsets-per-trigger", str(args.max_offsets)]  # fmt: skip
    env = {} if tree == PROJECT_ROOT else {  # that tree's code, this tree's jars
        "PYTHONPATH": str(tree), "VERIFIER_JARS_DIR": str(jars_root())}
    proc = ManagedProcess("observer", argv, run_dir / "observer.log", env=env, cwd=tree)
    proc.start()
    peak, cpu_end, first, stop = float("nan"), float("nan"), {}, threading.Event()
    watch = threading.Thread(target=_first_batches_cpu, args=(run_dir, proc.pid, stop, first))
    watch.start()
    try:
        drain(bs, [topic], run_dir, timeout=900)
        peak, cpu_end = peak_rss_mb(proc.pid), tree_cpu_s(proc.pid)
    finally:
        stop.set()
        watch.join()
        proc.terminate(60)
    out = {"peak_rss_mb": peak}
    later = sum(read_observations(run_dir, "spark", iso).filter(pc.field("batch") > 0).num_rows
                for iso in LEVELS)  # rows written after the first batches, both levels
    out["cpu_us_per_row"] = ((cpu_end - first.get("cpu_s", float("nan"))) * 1e6 / later
                             if later else float("nan"))
    log = (run_dir / "observer.log").read_text(errors="replace")
    for iso in LEVELS:
        batches = {r for r in read_observations(run_dir, "spark", iso).column("batch")
                   .to_pylist()}  # fmt: skip
        live = [(int(m.group(3)), int(m.group(4))) for m in _LIVE.finditer(log)
                if m.group(1) == iso]  # fmt: skip
        rows, ms = sum(r for r, _ in live), sum(t for _, t in live)
        row = {"capacity": capacity(run_dir, iso, batches), "batches": len(batches),
               "live_ms": ms, "live_us_per_row": 1000 * ms / rows if rows else float("nan")}
        if checks == "on":
            t0 = time.perf_counter()
            got = final(run_dir, iso, "exactly-once", run_id, {PID: topic})
            row["final_ms"] = (time.perf_counter() - t0) * 1000
            if got is not None:
                state, anomalies = got
                row["anomalies"], row["ranges"] = anomalies.num_rows, state.ranges()
        out[iso] = row
    return out


def stateful_shape(bs: str, topic: str, args) -> dict[str, float]:
    """Rows/s of a no-op foreachBatch query, with and without a streaming aggregation by
    (topic, partition) before it (state store + shuffle per batch), one after the other."""
    from pyspark.sql import functions as F

    from streaming.session import spark_session

    spark = spark_session(app_name="live-bench-stateful", master="local[2]")
    out = {}
    try:
        for shape in ("plain", "stateful", "plain", "stateful"):
            ck = Path(tempfile.mkdtemp(prefix=f"live-bench-{shape}-"))
            counted = {"rows": 0}
            src = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bs)
                   .option("subscribe", topic).option("startingOffsets", "earliest")
                   .option("maxOffsetsPerTrigger", str(args.max_offsets)).load()
                   .select("topic", "partition", "offset"))
            if shape == "stateful":
                src = src.groupBy("topic", "partition").agg(F.max("offset").alias("offset"),
                                                           F.count("*").alias("n"))
                mode = "update"
            else:
                mode = "append"

            def sink(df, _bid, counted=counted, shape=shape):
                if shape == "stateful":
                    counted["rows"] = sum(r["n"] for r in df.collect())
                else:
                    counted["rows"] += df.count()

            t0 = time.monotonic()
            q = (src.writeStream.outputMode(mode).option("checkpointLocation", str(ck))
                 .foreachBatch(sink).trigger(availableNow=True).start())
            q.awaitTermination()
            secs = time.monotonic() - t0
            total = args.expected_rows
            out.setdefault(shape, []).append(total / secs)
    finally:
        spark.stop()
    return {k: statistics.median(v) for k, v in out.items()}


def compare_checks(bs: str, topic: str, run_id: str, args) -> None:
    """The observer with its live checks off and on, alternating."""
    results: dict[str, list[dict]] = {"off": [], "on": []}
    for r in range(args.rounds):
        for checks in (("off", "on") if r % 2 == 0 else ("on", "off")):
            res = observe(bs, topic, run_id, checks, args)
            results[checks].append(res)
            print(f"round {r + 1} checks {checks:3s}: " + "  ".join(
                f"{iso} {res[iso]['capacity']:,.0f}/s" for iso in LEVELS)
                + f"  peak RSS {res['peak_rss_mb']:.0f} MB", flush=True)
    print("\n| isolation | checks off rows/s | checks on rows/s | on/off | live checks "
          "us/row | anomalies | state ranges | live result at drain ms |")
    print("|---|---|---|---|---|---|---|---|")
    for iso in LEVELS:
        off = statistics.median(x[iso]["capacity"] for x in results["off"])
        on = statistics.median(x[iso]["capacity"] for x in results["on"])
        last = results["on"][-1][iso]
        print(f"| {iso} | {off:,.0f} | {on:,.0f} | {on / off:.2f} | "
              f"{statistics.median(x[iso]['live_us_per_row'] for x in results['on']):.1f}"
              f" | {last.get('anomalies')} | {last.get('ranges')} | "
              f"{last.get('final_ms', float('nan')):.0f} |")
    print(f"observer peak RSS: off {max(x['peak_rss_mb'] for x in results['off']):.0f} MB"
          f", on {max(x['peak_rss_mb'] for x in results['on']):.0f} MB")


def compare_trees(bs: str, topic: str, run_id: str, args) -> None:
    """The baseline tree's observer and this one's, alternating, checks as given."""
    trees = {"baseline": args.baseline.resolve(), "this": PROJECT_ROOT}
    results: dict[str, list[dict]] = {name: [] for name in trees}
    for r in range(args.rounds):
        for name in (("baseline", "this") if r % 2 == 0 else ("this", "baseline")):
            res = observe(bs, topic, run_id, args.baseline_checks, args, trees[name])
            results[name].append(res)
            print(f"round {r + 1} {name:8s}: " + "  ".join(
                f"{iso} {res[iso]['capacity']:,.0f}/s ({res[iso]['batches']} batches)"
                for iso in LEVELS) + f"  observer CPU {res['cpu_us_per_row']:.1f} us/row"
                f"  peak RSS {res['peak_rss_mb']:.0f} MB", flush=True)
    print(f"\n| isolation | baseline rows/s | this rows/s | this/baseline | (checks "
          f"{args.baseline_checks}, batches <= {args.max_offsets:,} offsets) |")
    print("|---|---|---|---|---|")
    for iso in LEVELS:
        base = statistics.median(x[iso]["capacity"] for x in results["baseline"])
        this = statistics.median(x[iso]["capacity"] for x in results["this"])
        print(f"| {iso} | {base:,.0f} | {this:,.0f} | {this / base:.2f} | |")
    cpu = {k: statistics.median(x["cpu_us_per_row"] for x in v) for k, v in results.items()}
    print(f"observer CPU (driver + JVM, after the first batches, per row of either level): "
          f"baseline {cpu['baseline']:.1f} us, this {cpu['this']:.1f} us, this/baseline "
          f"{cpu['this'] / cpu['baseline']:.2f} (100k rows/s at each level on 2 cores leave "
          f"10 us per row for everything, the broker included)")
    print(f"observer peak RSS: baseline {max(x['peak_rss_mb'] for x in results['baseline']):.0f}"
          f" MB, this {max(x['peak_rss_mb'] for x in results['this']):.0f} MB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-port", type=int, default=26700)
    ap.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / ".state" / "live-bench")
    ap.add_argument("--backlog", type=int, default=300_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--record-size", type=int, default=200)
    ap.add_argument("--dup-every", type=int, default=1000)
    ap.add_argument("--max-offsets", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stateful", action="store_true")
    ap.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                    help="compare the observer of the project copy in DIR with this one")
    ap.add_argument("--baseline-checks", choices=("on", "off"), default="on")
    args = ap.parse_args()

    cluster, _ = up(args.state_dir.resolve(), ClusterSpec(nodes=1, base_port=args.base_port))
    bs = cluster.bootstrap_servers
    run_id, topic = f"bench-{uuid.uuid4().hex[:6]}", f"t-live-{uuid.uuid4().hex[:6]}"
    try:
        create_topics(bs, {topic: args.partitions}, replication_factor=1)
        t0 = time.monotonic()
        sent = backlog(bs, topic, run_id, args.partitions, args.backlog, args.record_size,
                       args.dup_every)
        args.expected_rows = sent
        print(f"backlog: {sent:,} records ({args.backlog:,} identities, a duplicate every "
              f"{args.dup_every}) in {time.monotonic() - t0:.1f}s")
        if args.baseline is not None:
            compare_trees(bs, topic, run_id, args)
        else:
            compare_checks(bs, topic, run_id, args)
        if args.stateful:
            shapes = stateful_shape(bs, topic, args)
            print(f"\nstateful-operator shape (one level): plain foreachBatch "
                  f"{shapes['plain']:,.0f} rows/s, with an aggregation by (topic, partition) "
                  f"{shapes['stateful']:,.0f} rows/s: ratio "
                  f"{shapes['stateful'] / shapes['plain']:.2f}")
    finally:
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
