"""Pipeline-under-test benchmark: the tool around a pipeline vs the same query bare (issue 21).

Both read the same backlog of one topic (written once, before either starts) and process
it to its end:

1. **bare**: the preset's query in this process (``build(spark, source)``, trigger
   ``availableNow``), timed from ``start()`` to its end;
2. **with the tool**: the pipeline's driver process (``python -m
   streaming.pipelines.driver``, its plan, checkpoint and read-back), timed from its
   ``ready.json`` (query started) until its committed position reached the end offsets;
   then **drain to verdict**: SIGTERM (the driver stops and reads its output back) plus
   the judge (verifier.judge.pipeline) on the read-back rows.

It prints the throughput of each, the ratio (target >= 0.8) and the drain-to-verdict time.

    .venv/bin/python benchmarks/pipeline_bench.py [--pipeline file] [--records 100000]
        [--bootstrap-servers BS]

Without ``--bootstrap-servers`` it starts (and stops) its own 1-node cluster; with it,
its topics are deleted at the end.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kafka import KafkaProducer

from streaming.plain_reader import read_all
from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.topics import create_topics, delete_topics, end_offsets
from verifier.orchestration.pipelines import PipelineProcess, committed_position, stop
from verifier.rundata.plan import PlannedProducer, RunPlan
from verifier.rundata.records import RecordIdentity, encode_value
from verifier.rundata.waiting import wait_until


def backlog(bs: str, topic: str, run_id: str, partitions: int, n: int, size: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bs, acks=1, linger_ms=5, batch_size=128 * 1024)
    for i in range(n):
        p = i % partitions
        rid = RecordIdentity(run_id, "bench-0", 1, p, i // partitions, None, False,
                             int(time.time() * 1000))
        producer.send(topic, encode_value(rid, size), partition=p)
    producer.flush()
    producer.close()


def bare(bs: str, topic: str, spec: str, folder: Path) -> float:
    """Seconds the query takes to process the backlog, in this process."""
    from streaming.pipelines.contract import CONF_BOOTSTRAP, CONF_PATH, CONF_TOPIC
    from streaming.pipelines.driver import DELTA_CONF
    from streaming.pipelines.loader import load_pipeline
    from streaming.session import spark_session
    from verifier.rundata import jvm

    jars = [*jvm.spark_kafka_jars().jars(), *jvm.delta_jars().jars()]
    spark = spark_session("pipeline-bench-bare", "local[2]",
                          {**DELTA_CONF, "spark.jars": ",".join(map(str, jars)),
                           CONF_PATH: str(folder / "out"), CONF_TOPIC: f"{topic}.bare-out",
                           CONF_BOOTSTRAP: bs})
    try:
        source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bs)
                  .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
                  .option("startingOffsets", "earliest").load())
        writer = load_pipeline(spec).build(spark, source).trigger(availableNow=True)
        start = time.monotonic()
        q = writer.option("checkpointLocation", str(folder / "ckpt")).start()
        q.awaitTermination()
        return time.monotonic() - start
    finally:
        spark.stop()


def with_tool(bs: str, topic: str, run_id: str, spec: str, folder: Path) -> tuple[float, float]:
    """(seconds from query start to drained, seconds from drain to verdict)."""
    from verifier.judge.pipeline import PipelineSpec, judge, read_input_log
    from verifier.rundata.columns import pipeline_column
    from verifier.rundata.pipelines import read_readback

    run = folder / "run"
    run.mkdir(parents=True)
    plan = RunPlan(run=run_id, scenario="bench", seed=0, sink="exactly-once",
                   bootstrap_servers=bs,
                   producers={"bench-0": PlannedProducer("bench-0", "idempotent", "idempotent",
                                                          topic)},
                   spark_master="local[2]",
                   extra={"pipelines": {"p": {"spec": spec, "guarantee": "exactly-once",
                                              "isolation": "read_committed",
                                              "output_topic": f"{topic}.out", "hold_ms": 0}}})
    plan.write(run / "config.json")
    ends = {f"{t}-{p}": o for (t, p), o in end_offsets(bs, [topic], "read_committed").items()}
    proc = PipelineProcess(run, "p", run / "config.json", {})
    proc.start()
    try:
        wait_until(lambda: (proc.where.ready.exists(), "not ready"), timeout=300,
                   what="the pipeline's query to start", expected="ready.json")
        started = time.monotonic()

        def drained():
            pos = committed_position(proc.where)
            return all(pos.get(tp, 0) >= e for tp, e in ends.items()), pos

        wait_until(drained, timeout=900, what="the pipeline's drain",
                   expected="committed position >= end offsets", max_interval=0.2)
        ran = time.monotonic() - started
        t0 = time.monotonic()
        stop([proc])
        rows, info = read_readback(proc.where)
        read_all(bs, [topic], run_id, run)
        spec_ = PipelineSpec("p", pipeline_column("p"), "pipeline/exactly-once", "read_committed")
        outcome, _ = judge(spec_, read_input_log(run, "read_committed"), rows,
                           info["batches"], ends, run_id)
        verdict = time.monotonic() - t0
        assert not outcome.groups, [g.kind for g in outcome.groups]
        return ran, verdict
    finally:
        proc.terminate(timeout=30)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipeline", default="file")
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--bootstrap-servers", default=None)
    p.add_argument("--base-port", type=int, default=28100)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pipeline-bench-") as tmp:
        folder = Path(tmp)
        cluster, topics = None, []
        bs = args.bootstrap_servers
        try:
            if bs is None:  # up() returns (cluster, how): stopped below, also on an error
                cluster, _ = up(folder / "cluster", ClusterSpec(nodes=1, base_port=args.base_port))
                bs = cluster.bootstrap_servers
            run_id = f"bench-{uuid.uuid4().hex[:6]}"
            topic = f"{run_id}.in"
            topics = [topic, f"{topic}.out", f"{topic}.bare-out"]
            create_topics(bs, dict.fromkeys(topics, args.partitions), 1)
            backlog(bs, topic, run_id, args.partitions, args.records, args.size)
            bare_s = bare(bs, topic, args.pipeline, folder / "bare")
            tool_s, verdict_s = with_tool(bs, topic, run_id, args.pipeline, folder / "tool")
        finally:
            if cluster is not None:
                cluster.down()
            elif topics:  # the user's cluster keeps nothing of the benchmark
                delete_topics(bs, topics)
    n = args.records
    print(f"pipeline {args.pipeline}: {n} records of {args.size} B, {args.partitions} partitions")
    print(f"  bare query        {bare_s:7.1f} s  {n / bare_s:9.0f} records/s")
    print(f"  with the tool     {tool_s:7.1f} s  {n / tool_s:9.0f} records/s")
    print(f"  ratio tool/bare   {bare_s / tool_s:7.2f}   (target >= 0.8)")
    print(f"  drain to verdict  {verdict_s:7.1f} s  (stop + read-back + plain read + judge)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
