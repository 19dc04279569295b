"""Each application preset against its client's bare loop (issue 47; a script, not a test).

Per preset (docs/applications.md), measured side by side on one local cluster this script
starts itself (1 node; stopped at the end, also on Ctrl-C), or one given with
``--bootstrap-servers``:

- the preset, started as a run starts an instance (its argv from
  ``verifier.rundata.apps.PRESETS``, the environment contract, a state file);
- the same client's bare loop, with the same client settings, batches and output
  partitions, started with the same environment: for the kafka-python copiers a
  consume-produce loop in its own process (this file, ``--bare``), for the Java copiers
  ``benchmarks/BareCopier.java``, for the Streams presets ``benchmarks/BareStreams.java``
  (the same topology and settings on Streams' own clients): what each leaves out is what
  the tool adds (the state file, the rebalance listener, Streams' counting clients, the
  start-over on an error).

Both sides copy the same input (``--records`` records of ``--record-size`` B in 3
partitions, written once) into a fresh output topic whose records carry the broker's
append time (``message.timestamp.type=LogAppendTime``; Streams would otherwise keep the
input's timestamps), with a fresh group, one instance each. The rate is the records read
back at read_committed over the span from the first append to the last, so process
start-up and the group's join are not counted; a side that did not copy every record
exactly once is an error. ``--process-ms`` (default 0, a preset's default is 200) is the
copiers' "processing" sleep on both sides: with 200 both are bound by the sleep (at most
1,000 records/s for batches of 200). Per preset, preset and bare alternate ``--repeat``
times (the first side alternating too) and the medians are compared: target preset / bare
>= 0.8. One bare copy first warms the broker up (not counted). Timings are printed, never
asserted.

    .venv/bin/python benchmarks/app_bench.py [--records 20000] [--repeat 1] \\
        [--presets copier-commit-after,...] [--process-ms 0] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verifier.rundata import apps as A  # noqa: E402
from verifier.rundata import jvm  # noqa: E402

TARGET = 0.8
PARTITIONS = 3
VERIFIER = str(ROOT / ".venv" / "bin" / "verifier")
JAVA_OPTS = list(A.JAVA_OPTS)
#: the presets with a bare twin here: the copiers and the stateless Streams pass-through
#: (the stateful count emits updates, not one record per input; the share copier reads
#: through a share group, a loop of another shape: not measured yet)
MEASURED = ("copier-commit-before", "copier-commit-after", "copier-transactional",
            "java-copier-commit-before", "java-copier-commit-after",
            "java-copier-transactional", "streams-at-least-once", "streams-exactly-once-v2")
#: how long one side may take to copy everything before it counts as stuck
COPY_TIMEOUT = 120.0


# -- the bare kafka-python loop (this file, --bare) ---------------------------------------

def bare_copier(strategy: str, process_ms: int) -> None:
    """producers.app_copier's loop without the tool's parts: the same clients, batches
    and partitions; no state file, no rebalance listener, no start-over. Runs until
    killed."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata

    env = os.environ
    bs = env[A.ENV_BOOTSTRAP].split(",")
    output = env[A.ENV_OUTPUT]
    transactional = strategy == "transactional"
    producer = KafkaProducer(bootstrap_servers=bs, acks="all", enable_idempotence=True,
                             **({"transactional_id": env[A.ENV_TXN_PREFIX] + "bare"}
                                if transactional else {}))
    consumer = KafkaConsumer(bootstrap_servers=bs, group_id=env[A.ENV_GROUP],
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level="read_committed", max_poll_records=200)
    if transactional:
        producer.init_transactions()
    consumer.subscribe(env[A.ENV_INPUTS].split(","))
    out_partitions = len(producer.partitions_for(output))
    while True:
        batch = consumer.poll(timeout_ms=200)
        if not batch:
            continue
        offsets = {tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in batch}
        if transactional:
            producer.begin_transaction()
        if strategy == "before":
            consumer.commit(offsets)
        time.sleep(process_ms / 1000)
        for tp, records in batch.items():
            for r in records:
                producer.send(output, value=r.value, key=r.key, headers=list(r.headers or ()),
                              partition=tp.partition % out_partitions)
        producer.flush()
        if strategy == "after":
            consumer.commit(offsets)
        elif transactional:
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            producer.commit_transaction()


# -- the two sides' commands --------------------------------------------------------------

def preset_argv(name: str, process_ms: int, classpath: str) -> list[str]:
    p = A.PRESETS[name]
    argv = list(p.argv(sys.executable, jvm.java_executable(), classpath))
    if "--commit" in p.args:
        argv += ["--process-ms", str(process_ms)]
    return argv


def bare_argv(name: str, process_ms: int, classpath: str) -> list[str]:
    p = A.PRESETS[name]
    java = [jvm.java_executable(), *JAVA_OPTS, "-cp", classpath]
    if p.runtime == "python":
        strategy = p.args[p.args.index("--commit") + 1]
        return [sys.executable, str(Path(__file__).resolve()), "--bare", strategy,
                "--process-ms", str(process_ms)]
    if "--commit" in p.args:
        strategy = p.args[p.args.index("--commit") + 1]
        return [*java, str(ROOT / "benchmarks" / "BareCopier.java"), strategy, str(process_ms)]
    guarantee = p.args[p.args.index("--guarantee") + 1]
    return [*java, str(ROOT / "benchmarks" / "BareStreams.java"), guarantee]


# -- one measurement ----------------------------------------------------------------------

def fill_input(bs: str, topic: str, n: int, size: int) -> None:
    from kafka import KafkaProducer

    from verifier.harness.topics import create_topics

    create_topics(bs, {topic: PARTITIONS}, replication_factor=1)
    producer = KafkaProducer(bootstrap_servers=bs.split(","), acks="all", linger_ms=5)
    pad = b"x" * size
    for i in range(n):
        producer.send(topic, key=str(i).encode(), value=(b"%d:" % i + pad)[:size],
                      partition=i % PARTITIONS)
    producer.flush()
    producer.close()


def read_back(bs: str, topic: str, n: int, deadline: float, proc) -> tuple[int, int, int]:
    """(records, first append ms, last append ms) of ``topic`` at read_committed, once it
    holds ``n`` records (or the deadline, or the side's process died)."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bs.split(","), isolation_level="read_committed",
                      enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if sum(c.end_offsets(tps).values()) >= n:
                break
            time.sleep(0.5)
        c.assign(tps)
        c.seek_to_beginning()
        count, first, last = 0, None, None
        while count < n and time.monotonic() < deadline and proc.poll() is None:
            for records in c.poll(timeout_ms=1000).values():
                for r in records:
                    count += 1
                    first = r.timestamp if first is None else min(first, r.timestamp)
                    last = r.timestamp if last is None else max(last, r.timestamp)
        # anything more (a duplicate) comes in the next poll
        count += sum(len(v) for v in c.poll(timeout_ms=1000).values())
        return count, first or 0, last or 0
    finally:
        c.close()


def measure(bs: str, input_topic: str, n: int, name: str, argv: list[str],
            work: Path, state: bool) -> dict:
    from verifier.harness.topics import create_topics, delete_topics

    run_id = f"abench{uuid.uuid4().hex[:6]}"
    state_file = work / f"{run_id}.state.json" if state else None
    env = A.environment(run_id, name, bs, [input_topic], 0, state_file)
    output = env[A.ENV_OUTPUT]
    create_topics(bs, {output: PARTITIONS}, replication_factor=1,
                  configs={"message.timestamp.type": "LogAppendTime"})
    log = open(work / f"{run_id}.log", "w")  # noqa: SIM115 - closed below
    t_start = time.time()
    proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        count, first, last = read_back(bs, output, n, time.monotonic() + COPY_TIMEOUT, proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # no clean stop needed: a fresh group next
        proc.wait()
        log.close()
        delete_topics(bs, [output])
    if count != n:
        tail = (work / f"{run_id}.log").read_text()[-2000:]
        raise RuntimeError(f"{name} {argv[-2:]}: {count} of {n} records read back\n{tail}")
    seconds = max(last - first, 1) / 1000
    return {"rate": (n - 1) / seconds, "seconds": seconds,
            "to_last_s": last / 1000 - t_start}


def measure_preset(bs: str, input_topic: str, n: int, name: str, repeat: int,
                   process_ms: int, classpath: str, work: Path) -> dict:
    sides = {"preset": (preset_argv(name, process_ms, classpath), True),
             "bare": (bare_argv(name, process_ms, classpath), False)}
    got: dict[str, list[dict]] = {"preset": [], "bare": []}
    for r in range(repeat):
        for side in (("preset", "bare") if r % 2 == 0 else ("bare", "preset")):
            argv, state = sides[side]
            got[side].append(measure(bs, input_topic, n, name, argv, work, state))
    preset = statistics.median(m["rate"] for m in got["preset"])
    bare = statistics.median(m["rate"] for m in got["bare"])
    return {"preset": name, "runtime": A.PRESETS[name].runtime, "preset_rate": preset,
            "bare_rate": bare, "ratio": preset / bare, "meets_target": preset / bare >= TARGET,
            "runs": got}


def table(cells: list[dict]) -> str:
    head = (f"{'preset':<28} {'preset rec/s':>13} {'bare rec/s':>11} {'ratio':>6}  "
            f">= {TARGET}")
    rows = [f"{c['preset']:<28} {c['preset_rate']:>13,.0f} {c['bare_rate']:>11,.0f} "
            f"{c['ratio']:>6.2f}  {'yes' if c['meets_target'] else 'NO'}" for c in cells]
    return "\n".join([head, *rows])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=20000)
    p.add_argument("--record-size", type=int, default=200)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--presets", default=",".join(MEASURED))
    p.add_argument("--process-ms", type=int, default=0)
    p.add_argument("--bootstrap-servers")
    p.add_argument("--base-port", type=int, default=27500,
                   help="below 32768: ports in the ephemeral range can be taken by any client")
    p.add_argument("--state-dir", type=Path, default=ROOT / ".state" / "app-bench")
    p.add_argument("--json", type=Path)
    p.add_argument("--bare", choices=("before", "after", "transactional"),
                   help=argparse.SUPPRESS)  # the bare kafka-python loop's own process
    a = p.parse_args()
    if a.bare:
        bare_copier(a.bare, a.process_ms)
        return 0
    names = [n.strip() for n in a.presets.split(",") if n.strip()]
    unknown = [n for n in names if n not in MEASURED]
    if unknown:
        p.error(f"presets without a bare twin here {unknown} (measured: {list(MEASURED)})")
    classpath = ""
    if any(A.PRESETS[n].runtime == "java" for n in names):
        jarset = jvm.java_apps_jars()
        jvm.build_project(jvm.APPS_PROJECT, jarset)
        classpath = jarset.classpath()
    started = None
    cells: list[dict] = []
    t0 = time.monotonic()
    try:
        if a.bootstrap_servers:
            bs = a.bootstrap_servers
        else:
            started = a.state_dir
            subprocess.run([VERIFIER, "cluster", "up", "--nodes", "1", "--base-port",
                            str(a.base_port), "--state-dir", str(started)], check=True, cwd=ROOT)
            bs = json.loads((started / "cluster.json").read_text())["bootstrap_servers"]
        input_topic = f"abench-in-{uuid.uuid4().hex[:6]}"
        fill_input(bs, input_topic, a.records, a.record_size)
        with tempfile.TemporaryDirectory() as tmp:
            # a broker fresh from start-up runs cold (JIT, page cache): the first pair of
            # the first run favoured its second side; one bare copy first, not counted
            warm = measure(bs, input_topic, a.records, names[0],
                           bare_argv(names[0], a.process_ms, classpath), Path(tmp), False)
            print(f"  warm-up: {names[0]} bare, {warm['rate']:,.0f}/s (not counted)",
                  flush=True)
            for name in names:
                try:
                    c = measure_preset(bs, input_topic, a.records, name, a.repeat,
                                       a.process_ms, classpath, Path(tmp))
                except RuntimeError as exc:  # one preset's failure: the others still run
                    print(f"  {name}: {exc}", flush=True)
                    continue
                cells.append(c)
                print(f"  {name}: preset {c['preset_rate']:,.0f}/s, bare "
                      f"{c['bare_rate']:,.0f}/s, ratio {c['ratio']:.2f}", flush=True)
        if a.bootstrap_servers:
            from verifier.harness.topics import delete_topics

            delete_topics(bs, [input_topic])
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if started is not None:
            subprocess.run([VERIFIER, "cluster", "down", "--state-dir", str(started)],
                           cwd=ROOT, stdout=subprocess.DEVNULL)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"\n{when}, {os.cpu_count()} cores, {'1 local broker' if started else bs}, "
          f"kafka-clients {jvm.clients_version()}, {a.records} records of {a.record_size} B "
          f"in {PARTITIONS} partitions, process-ms {a.process_ms}, median of {a.repeat} "
          f"interleaved pair(s), one instance a side, {time.monotonic() - t0:.0f} s in all")
    print(table(cells))
    met = sum(1 for c in cells if c["meets_target"])
    print(f"meet >= {TARGET}: {met} of {len(cells)}")
    if a.json:
        a.json.write_text(json.dumps({"date": when, "cells": cells}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
