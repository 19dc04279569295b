"""Benchmark: verification throughput on synthetic runs of 1M and 10M observed records.

    .venv/bin/python benchmarks/verify_bench.py [--sizes 1000000 10000000] [--work DIR]

For each size it writes a synthetic run (docs/formats.md, clean: every check must come
out empty except the expected aborted reads) and times
``verifier.assess.batch.analyze`` in a
fresh Python + JVM process after a warm-up on the small test run, so JIT and session
start-up are not counted. Prints observed records per second, peak memory (driver JVM
and Python, from the kernel's high-water marks) and the largest/smallest time ratio.
Targets (DESIGN §9): >= 1M observed records/s on 2 cores; 10M/1M ratio <= 11.

It also times, in another fresh process after the same warm-up, what any verifier of
this design must do before checking anything (``--no-floors`` skips it): parse the
producer histories (JSON lines, formats §2), scan the observations, bring each (topic,
partition)'s rows together (one shuffle) and hand them to Python (Arrow, with a function
that only counts).
Their sum is the fastest this design could be: a lower bound, not a target.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUN = "bench"
PARTS = 4
TXN_SIZE = 100  # records per transaction (one partition each, then a marker)
MODES = ("at-least-once", "idempotent", "at-most-once", "transactional")
COMBOS = [(r, i) for r in ("spark", "plain") for i in ("read_committed", "read_uncommitted")]


def _history(path: Path, pid: str, mode: str, topic: str, p: list, seq: list, off: list,
             txn: list | None, t: list) -> None:  # fmt: skip
    with open(path, "wb") as f:
        f.write(orjson.dumps({"type": "header", "format": "producer-history", "version": 1,
                              "run": RUN, "pid": pid, "mode": mode, "topic": topic,
                              "partitions": list(range(PARTS))}) + b"\n")  # fmt: skip
        f.write(b'{"type":"session","ses":1,"t":0,"config":{},"os_pid":1}\n')
        lines, last_txn = [], -1
        for i in range(len(p)):
            tx = "null" if txn is None else str(txn[i])
            if txn is not None and txn[i] != last_txn:
                if last_txn >= 0:
                    lines.append(
                        f'{{"type":"invoke","f":"commit","ses":1,"txn":{last_txn},"t":{t[i]}}}\n'
                        f'{{"type":"ok","f":"commit","ses":1,"txn":{last_txn},"t":{t[i]}}}\n'
                    )
                lines.append(
                    f'{{"type":"invoke","f":"begin","ses":1,"txn":{txn[i]},"abort":false,"t":{t[i]}}}\n'
                )
                last_txn = txn[i]
            lines.append(
                f'{{"type":"invoke","f":"send","ses":1,"p":{p[i]},"seq":{seq[i]},"txn":{tx},"t":{t[i]}}}\n'
                f'{{"type":"ok","f":"send","ses":1,"p":{p[i]},"seq":{seq[i]},"txn":{tx},'
                f'"offset":{off[i]},"t":{t[i] + 1}}}\n')  # fmt: skip
            if len(lines) > 100_000:
                f.write("".join(lines).encode())
                lines = []
        if last_txn >= 0:
            lines.append(
                f'{{"type":"invoke","f":"commit","ses":1,"txn":{last_txn},"t":{t[-1]}}}\n'
                f'{{"type":"ok","f":"commit","ses":1,"txn":{last_txn},"t":{t[-1]}}}\n'
            )
        f.write("".join(lines).encode())


def make_run(out: Path, observed: int) -> Path:
    """A clean synthetic run with ``observed`` observation rows (4 per record)."""
    shutil.rmtree(out, ignore_errors=True)
    (out / "histories").mkdir(parents=True)
    per_mode = observed // len(COMBOS) // len(MODES)
    producers, tables = {}, []
    t0 = 1_795_000_000_000
    for mode in MODES:
        pid, topic = f"{mode}-0", f"t-{mode}"
        producers[pid] = {"mode": mode, "topic": topic}
        i = range(per_mode)
        txn = None
        if mode == "transactional":
            txn = [x // TXN_SIZE for x in i]  # each transaction in one partition, round robin
            p = [x % PARTS for x in txn]
            k = [x // PARTS for x in txn]  # the k-th transaction of this partition
            seq = [kk * TXN_SIZE + x % TXN_SIZE for kk, x in zip(k, i, strict=True)]
            off = [s + kk for s, kk in zip(seq, k, strict=True)]  # a marker after each txn
        else:
            p = [x % PARTS for x in i]
            seq = off = [x // PARTS for x in i]
        t = [t0 + x // 50 for x in i]  # 50 records per ms
        _history(out / "histories" / f"{pid}.jsonl", pid, mode, topic, p, seq, off, txn, t)
        tables.append(dict(topic=topic, pid=pid, p=p, seq=seq, off=off, txn=txn, t=t))
    obs = out / "observations"
    for reader, iso in COMBOS:
        d = obs / reader / iso
        d.mkdir(parents=True)
        for n, m in enumerate(tables):
            rows = len(m["p"])
            tx = pa.nulls(rows, pa.int64()) if m["txn"] is None else pa.array(m["txn"], pa.int64())
            seq, tt = pa.array(m["seq"], pa.int64()), pa.array(m["t"], pa.int64())
            zeros = pa.array([False] * rows)
            pq.write_table(pa.table({
                "reader": pa.array([reader] * rows), "isolation": pa.array([iso] * rows),
                "topic": pa.array([m["topic"]] * rows), "partition": pa.array(m["p"], pa.int32()),
                "offset": pa.array(m["off"], pa.int64()), "run": pa.array([RUN] * rows),
                "pid": pa.array([m["pid"]] * rows), "ses": pa.array([1] * rows, pa.int32()),
                "p": pa.array(m["p"], pa.int32()), "seq": seq, "txn": tx,
                "abort": zeros, "ts_send": tt, "ts_broker": pc.add(tt, 1),
                "batch": pc.divide(seq, 1000), "observed_at": pc.add(tt, 500), "foreign": zeros,
                "error": pa.nulls(rows, pa.string()),
            }), d / f"part-{n:05d}.parquet")  # fmt: skip
    (obs / "_format.json").write_bytes(b'{"format":"observations","version":1}')
    ends = {}
    for m in tables:
        for q in range(PARTS):
            end = max(o for o, pp in zip(m["off"], m["p"], strict=True) if pp == q) + 2
            ends[f"{m['topic']}-{q}"] = end
    (out / "drain.json").write_bytes(
        orjson.dumps({"format": "drain", "version": 1, "completed": True,
                      "end_offsets": {"read_committed": ends, "read_uncommitted": ends}})
    )
    (out / "nemesis.jsonl").write_bytes(
        orjson.dumps(
            {"type": "header", "format": "nemesis-history", "version": 1, "run": RUN, "seed": 1}
        )
        + b"\n"
    )
    (out / "config.json").write_bytes(orjson.dumps({
        "format": "run-config", "version": 1, "run": RUN, "scenario": "bench",
        "sink": "exactly-once", "producers": producers}))  # fmt: skip
    return out


def _vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def floors(spark, run_dir: Path) -> dict[str, float]:
    """Seconds of the steps every check of this design needs before it checks anything."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from verifier.judge.checks.derive import PASS_COLUMNS, _map_arrow
    from verifier.judge.checks.emit import OUT_SCHEMA
    from verifier.judge.checks.load import load_run, read_run_files

    def count_only(batches):
        sum(b.num_rows for b in batches)
        yield from pa.Table.from_pylist([], OUT_SCHEMA).to_batches()

    out, start = {}, time.perf_counter()
    files = read_run_files(run_dir)
    out["parse histories"] = time.perf_counter() - start
    obs = load_run(spark, run_dir, files).observations
    cols = [c for c in PASS_COLUMNS if c not in ("ci", "fgn")]
    obs = obs.select(*cols, *[F.lit(0).alias(c) for c in ("ci", "fgn")])
    # a hash of every column after the step: Spark may not prune a column the checks read
    # (a bare count() is answered from Parquet footers)
    every = F.max(F.xxhash64(*cols))
    by_offset = Window.partitionBy("topic", "partition").orderBy("offset")
    steps = {
        "scan observations": lambda: obs.agg(every).collect(),
        "scan + shuffle by partition":
            lambda: obs.repartition("topic", "partition").agg(every).collect(),
        "scan + shuffle + hand to Python": lambda: _map_arrow(
            obs.repartition("topic", "partition"), count_only).count(),
        # the alternative, checks in the JVM: one window in offset order per partition
        # (what a single check there needs; the reorder check alone needs this)
        "scan + one JVM window per partition": lambda: obs.select(
            F.lag(F.xxhash64(*cols)).over(by_offset).alias("h")).agg(F.max("h")).collect(),
    }  # fmt: skip
    for name, step in steps.items():
        start = time.perf_counter()
        step()
        out[name] = time.perf_counter() - start
    return out


def measure(run_dir: Path, driver_memory: str, what: str = "analysis") -> dict:
    """Runs in a fresh process: warm up, then time one full analysis, or the floors."""
    from streaming.session import spark_session
    from verifier.assess.batch import analyze

    spark = spark_session(app_name="verify-bench", conf={"spark.driver.memory": driver_memory})
    jvm_pid = spark.sparkContext._gateway.proc.pid
    try:
        analyze(spark, ROOT / "tests" / "data" / "runs" / "baseline")  # warm-up: JIT, codegen
        if what == "floors":
            return {"floors": floors(spark, run_dir)}
        start = time.perf_counter()
        doc = analyze(spark, run_dir)
        seconds = time.perf_counter() - start
    finally:
        jvm_mb = _vm_hwm_mb(jvm_pid)
        spark.stop()
    anomalies = {c["name"]: {k: a["count"] for k, a in c["anomalies"].items() if a["count"]}
                 for c in doc["columns"]}  # fmt: skip
    return {
        "seconds": seconds,
        "jvm_peak_mb": jvm_mb,
        "python_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "verdicts": [c["verdict"] for c in doc["columns"]],
        "anomalies": anomalies,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--work", type=Path, default=Path("/tmp/verify-bench"))
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--reuse", action="store_true", help="keep synthetic runs already written")
    ap.add_argument("--impl", type=Path, action="append", default=[],
                    help="also time the verifier of another source tree (e.g. an export of "
                         "the previous commit), side by side in the same conditions")
    ap.add_argument("--no-floors", action="store_true",
                    help="do not time the steps that bound any verifier of this design")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--what", default="analysis", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.driver_memory, args.what)))
        return 0
    results = {}
    trees = [ROOT, *args.impl]
    for n in args.sizes:
        run = args.work / f"run-{n}"
        if not (args.reuse and (run / "config.json").is_file()):
            t = time.perf_counter()
            make_run(run, n)
            print(f"{n:>11,} observed: synthetic run written in {time.perf_counter() - t:.1f}s",
                  flush=True)  # fmt: skip
        for tree in trees:
            r = _measure_in(tree, run, args.driver_memory)
            results.setdefault(tree, {})[n] = r
            print(
                f"{n:>11,} observed [{tree}]: {r['seconds']:.1f}s  "
                f"{n / r['seconds']:>12,.0f} records/s  "
                f"peak JVM {r['jvm_peak_mb']:.0f} MB, Python {r['python_peak_mb']:.0f} MB  "
                f"verdicts {r['verdicts']}  anomalies {r['anomalies']}  "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        if not args.no_floors:
            _print_floors(n, _measure_in(ROOT, run, args.driver_memory, "floors")["floors"])
    for tree, res in results.items():
        _ratio(tree, res)
    print(f"load average at end: {os.getloadavg()}")
    return 0


def _print_floors(n: int, low: dict[str, float]) -> None:
    if not low:
        return
    for name, s in low.items():
        print(f"{'':>13} floor: {name:<38} {s:6.1f}s  {n / s:>12,.0f} records/s")
    for what, step in (("Python", "scan + shuffle + hand to Python"),
                       ("JVM", "scan + one JVM window per partition")):  # fmt: skip
        bound = low["parse histories"] + low[step]
        label = f"parse + {step.removeprefix('scan + ')}"
        print(f"{'':>13} bound: {label:<38} {bound:6.1f}s  {n / bound:>12,.0f} records/s "
              f"(best case of checks in {what})", flush=True)


def _measure_in(tree: Path, run: Path, driver_memory: str, what: str = "analysis") -> dict:
    """Time one analysis (or the floors) in a fresh process with the verifier of source
    tree ``tree``."""
    script = tree / "benchmarks" / "verify_bench.py"
    cmd = [sys.executable, str(script), "--measure", str(run), "--driver-memory", driver_memory]
    if what != "analysis":
        cmd += ["--what", what]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ratio(tree: Path, results: dict) -> None:
    if len(results) > 1:
        lo, hi = min(results), max(results)
        print(
            f"[{tree}] time ratio {hi // lo}x records: "
            f"{results[hi]['seconds'] / results[lo]['seconds']:.2f} "
            f"(linear = {hi / lo:.0f}; target <= 11 for 10x)"
        )


if __name__ == "__main__":
    sys.exit(main())
