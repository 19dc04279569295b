"""A pipeline on the Spark standalone cluster against local[2], on the same data (issue 34).

One backlog of one topic (written once, before either starts); then, alternating, the
pipeline's driver process (``python -m streaming.pipelines.driver``, as a chaos run starts
it) reads it to its end:

1. **local[2]**: the driver's Spark in local mode, two cores (the default of a run);
2. **standalone**: the same driver on the cluster ``--spark-cluster standalone`` starts
   (a master and two workers on this machine, one executor of one core on each: the
   settings a chaos run gives a pipeline there), started once before the rounds.

Each is timed from its ``ready.json`` (the query started) until its committed position
reached the end offsets: on the cluster that includes its executors' start (the
application asks for them when its session starts, they come while the query plans its
first batch). It prints each round's records/s and the ratio standalone / local[2].

    .venv/bin/python benchmarks/standalone_bench.py [--pipeline delta] [--records 100000]
        [--rounds 2] [--bootstrap-servers BS]

Without ``--bootstrap-servers`` it starts (and stops) its own 1-node cluster.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pipeline_bench import backlog

from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.spark_standalone import StandaloneCluster, pipeline_conf
from verifier.harness.topics import create_topics, delete_topics, end_offsets
from verifier.orchestration.pipelines import PipelineProcess, committed_position
from verifier.rundata import jvm
from verifier.rundata.plan import PlannedProducer, RunPlan
from verifier.rundata.waiting import wait_until


def one_round(bs: str, topic: str, run_id: str, spec: str, folder: Path,
              master: str, conf: dict) -> float:
    """Seconds from the query's start until it committed past the backlog's end."""
    run = folder
    run.mkdir(parents=True)
    entry = {"spec": spec, "guarantee": "exactly-once", "isolation": "read_committed",
             "output_topic": f"{topic}.out.{folder.name}", "hold_ms": 0,
             "spark_master": master, "spark_conf": conf}
    plan = RunPlan(run=run_id, scenario="bench", seed=0, sink="exactly-once",
                   bootstrap_servers=bs,
                   producers={"bench-0": PlannedProducer("bench-0", "idempotent", "idempotent",
                                                          topic)},
                   extra={"pipelines": {"p": entry}})
    plan.write(run / "config.json")
    ends = {f"{t}-{p}": o for (t, p), o in end_offsets(bs, [topic], "read_committed").items()}
    proc = PipelineProcess(run, "p", run / "config.json", {"SPARK_LOCAL_IP": "127.0.0.1"})
    proc.start()
    try:
        wait_until(lambda: (proc.where.ready.exists(), "not ready"), timeout=600,
                   what="the pipeline's query to start", expected="ready.json")
        started = time.monotonic()

        def drained():
            pos = committed_position(proc.where)
            return all(pos.get(tp, 0) >= e for tp, e in ends.items()), pos

        wait_until(drained, timeout=1800, what="the pipeline's drain",
                   expected="committed position >= end offsets", max_interval=0.2)
        return time.monotonic() - started
    finally:
        proc.terminate(timeout=60)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipeline", default="delta")
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--bootstrap-servers", default=None)
    p.add_argument("--base-port", type=int, default=27400)
    args = p.parse_args(argv)
    jvm.choose_java()
    times: dict[str, list[float]] = {"local[2]": [], "standalone": []}
    with tempfile.TemporaryDirectory(prefix="standalone-bench-") as tmp:
        folder = Path(tmp)
        cluster, topics, spark = None, [], None
        bs = args.bootstrap_servers
        try:
            if bs is None:
                cluster, _ = up(folder / "cluster", ClusterSpec(nodes=1, base_port=args.base_port))
                bs = cluster.bootstrap_servers
            spark = StandaloneCluster(folder / "spark", cores=1)
            spark.start()
            run_id = f"bench-{uuid.uuid4().hex[:6]}"
            topic = f"{run_id}.in"
            topics = [topic] + [f"{topic}.out.{m}-{r}" for r in range(args.rounds)
                                for m in ("local", "standalone")]
            create_topics(bs, dict.fromkeys(topics, args.partitions), 1)
            backlog(bs, topic, run_id, args.partitions, args.records, args.size)
            for r in range(args.rounds):
                for name, master, conf in (("local[2]", "local[2]", {}),
                                           ("standalone", spark.url, pipeline_conf())):
                    short = "local" if name == "local[2]" else name
                    s = one_round(bs, topic, run_id, args.pipeline, folder / f"{short}-{r}",
                                  master, conf)
                    times[name].append(s)
                    print(f"round {r + 1} {name:10s} {s:7.1f} s  "
                          f"{args.records / s:9.0f} records/s", flush=True)
        finally:
            if spark is not None:
                spark.stop()
            if cluster is not None:
                cluster.down()
            elif topics:
                delete_topics(bs, topics)
    n = args.records
    local, standalone = (statistics.median(times[k]) for k in ("local[2]", "standalone"))
    print(f"pipeline {args.pipeline}: {n} records of {args.size} B, {args.partitions} "
          f"partitions, {args.rounds} round(s) each, medians")
    print(f"  local[2]            {local:7.1f} s  {n / local:9.0f} records/s")
    print(f"  standalone (2x1)    {standalone:7.1f} s  {n / standalone:9.0f} records/s")
    print(f"  ratio standalone / local[2]  {local / standalone:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
