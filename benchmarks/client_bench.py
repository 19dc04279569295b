"""Generator against each client's own bare producer loop (issue 13; a script, not a test).

Per client (kafka-python, java, librdkafka) and mode, on one local 3-node cluster this
script starts itself (and stops at the end, also on Ctrl-C), measured side by side:

- the tool's generator (``python -m producers``, the Java ``verifier.generator.Main``,
  ``python -m producers.rdkafka``) run standalone with ``--count``: records /
  (last event - first invoke) from its own history, so process and JVM start-up,
  producer construction and ``init_transactions`` are not counted;
- the client's own bare loop, with the producer settings the generator ran (read from its
  history's ``session`` line, so acks, batch.size, linger.ms, idempotence, retries and
  the transactional retry backoff are the same) and a fixed value of the same size; the
  Python loops also send a fixed key as long as the generator's longest
  (``<pid>:<p>:<seq>``, docs/formats.md §1), so both sides put records of the same size
  on the wire (ProducerPerformance has no key option: its records are ~25 B shorter):

  - java, plain modes: Kafka's ``org.apache.kafka.tools.ProducerPerformance``
    (kafka-tools jar in ``.jars``), its printed records/sec (excludes producer
    construction), same JVM flags as the Java generator; transactional:
    ``benchmarks/BareTxnLoop.java`` (``begin``, 10 sends, ``commit``; timed after
    ``initTransactions``), because ProducerPerformance has no "records per transaction"
    option, only ``--transaction-duration-ms`` (its least, 1 ms, gave ~20-record
    transactions here: a records/s ratio that favoured the bare side and a
    transactions/s ratio that favoured the generator);
  - kafka-python / librdkafka: a ``send``/``produce`` loop in its own process (this
    file, ``--bare``), timed from the first send to the end of ``flush()``; the
    transactional loop does ``begin``, 10 sends, ``commit``. The kafka-python loop gets
    the generator's ``fast_txn_retries`` (a patch, not a setting) so both run the same
    producer.

Plain modes write a 3-partition topic (replication 3); the Python loops go round robin
over the partitions as the generator does, ProducerPerformance uses the Java client's
default (sticky) partitioner. Transactional cells write a 1-partition topic: each
committed transaction then leaves exactly one commit marker in the log, so the number of
transactions a run made is (log end offset - records): every bare loop's count of commits
is checked against it. Both sides' records per transaction and transactions/s are printed.

Each measurement writes the same number of records (``--records``, ``--txn-records`` for
transactional cells; a plain cell whose first generator run lasts under ``--min-seconds``,
3 by default, gets enough more to last that long) to a fresh topic, deleted when the
measurement is done; per cell generator and bare alternate
``--repeat`` times, and the medians are compared (target: generator / bare >= 0.8).

    .venv/bin/python benchmarks/client_bench.py [--records 20000] [--txn-records 1000] \\
        [--repeat 3] [--clients java,librdkafka,kafka-python] [--modes ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from producers.clients import JAVA_MAIN, JAVA_OPTS, client_version  # noqa: E402
from verifier.rundata import jvm  # noqa: E402
from verifier.rundata.history import history_path, read_history  # noqa: E402

CLIENTS = ("kafka-python", "java", "librdkafka")
MODES = ("at-most-once", "at-least-once", "idempotent", "transactional")
TARGET = 0.8
TXN_SIZE = 10
VERIFIER = str(ROOT / ".venv" / "bin" / "verifier")
#: session-config keys that are not producer settings of the bare loop
NOT_PASSED = {"bootstrap.servers", "key.serializer", "value.serializer", "client.id",
              "record.size", "transactional.id", "record_size", "buffer_memory",
              "transactional_id", "client_id"}


# -- the cluster ------------------------------------------------------------------------

def cluster_up(base_port: int, state_dir: Path) -> str:
    subprocess.run([VERIFIER, "cluster", "up", "--base-port", str(base_port),
                    "--state-dir", str(state_dir)], check=True, cwd=ROOT)
    return json.loads((state_dir / "cluster.json").read_text())["bootstrap_servers"]


def cluster_down(state_dir: Path) -> None:
    subprocess.run([VERIFIER, "cluster", "down", "--state-dir", str(state_dir)], cwd=ROOT,
                   stdout=subprocess.DEVNULL)


@contextmanager
def measured_topic(bs: str, partitions: int) -> Iterator[str]:
    """A fresh topic for one measurement, deleted when it is done (also on an error or
    Ctrl-C): 30 measurements a cell of up to 200,000 records left ~60 GB of topics on a
    cluster given with --bootstrap-servers."""
    from verifier.harness.topics import create_topics, delete_topics

    name = f"cbench-{uuid.uuid4().hex[:8]}"
    create_topics(bs, {name: partitions}, replication_factor=3)
    try:
        yield name
    finally:
        delete_topics(bs, [name])


def end_offsets(bs: str, topic: str) -> int:
    """The sum of the topic's log end offsets (records plus transaction markers)."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bs.split(","))
    try:
        tps = [TopicPartition(topic, p) for p in c.partitions_for_topic(topic)]
        return sum(c.end_offsets(tps).values())
    finally:
        c.close()


# -- one measurement per side -----------------------------------------------------------

def generator_argv(client: str) -> list[str]:
    if client == "java":
        return [jvm.java_executable(), *JAVA_OPTS, "-cp",
                jvm.java_generator_jars().classpath(), JAVA_MAIN]
    module = "producers.rdkafka" if client == "librdkafka" else "producers"
    return [sys.executable, "-m", module]


def run_generator(bs: str, client: str, mode: str, n: int, size: int, run_dir: Path) -> dict:
    with measured_topic(bs, 1 if mode == "transactional" else 3) as topic:
        return _run_generator(bs, client, mode, n, size, run_dir, topic)


def _run_generator(bs: str, client: str, mode: str, n: int, size: int, run_dir: Path,
                   topic: str) -> dict:
    transactional = mode == "transactional"
    pid = f"{client}-{mode}-{topic[-8:]}"
    cmd = [*generator_argv(client), "--run-dir", str(run_dir), "--run-id", "cbench",
           "--mode", mode, "--pid", pid, "--topic", topic, "--bootstrap-servers", bs,
           "--count", str(n), "--record-size", str(size), "--txn-size", str(TXN_SIZE)]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    events = read_history(history_path(run_dir, pid)).events
    config = next(e["config"] for e in events if e["type"] == "session")
    first = next(e["t"] for e in events if e["type"] == "invoke")
    seconds = (max(e["t"] for e in events) - first) / 1000
    oks = sum(1 for e in events if e.get("f") == "send" and e["type"] == "ok")
    if oks != n:
        raise RuntimeError(f"{client} {mode} generator: {oks} of {n} sends ok")
    out = {"records": n, "seconds": seconds, "rate": n / seconds, "config": config,
           "key_size": len(f"{pid}:{(1 if transactional else 3) - 1}:{n}")}
    if transactional:
        txns = sum(1 for e in events if e.get("f") == "commit" and e["type"] == "ok")
        out.update(transactions=txns, txn_rate=txns / seconds, records_per_txn=n / txns)
    return out


def run_bare(bs: str, client: str, mode: str, n: int, size: int, config: dict,
             key_size: int, callbacks: bool = False) -> dict:
    with measured_topic(bs, 1 if mode == "transactional" else 3) as topic:
        return _run_bare(bs, client, mode, n, size, config, key_size, callbacks, topic)


def _run_bare(bs: str, client: str, mode: str, n: int, size: int, config: dict,
              key_size: int, callbacks: bool, topic: str) -> dict:
    transactional = mode == "transactional"
    props = {k: v for k, v in config.items() if k not in NOT_PASSED and v is not None}
    if client == "java" and transactional:
        # ProducerPerformance cannot make 10-record transactions: the Java client's own
        # bare loop that does (benchmarks/BareTxnLoop.java, a single-file program)
        cmd = [jvm.java_executable(), *JAVA_OPTS, "-cp", jvm.java_generator_jars().classpath(),
               str(ROOT / "benchmarks" / "BareTxnLoop.java"), bs, topic, str(n), str(size),
               str(TXN_SIZE), *(f"{k}={v}" for k, v in sorted(props.items()))]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        seconds, txns = (json.loads(text.strip().splitlines()[-1])[k]
                         for k in ("seconds", "transactions"))
        if end_offsets(bs, topic) - n != txns:
            raise RuntimeError(f"java bare loop: {txns} commits, log says otherwise")
    elif client == "java":
        cmd = [jvm.java_executable(), *JAVA_OPTS, "-cp", jvm.tools_jars().classpath(),
               "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
               "--num-records", str(n), "--record-size", str(size), "--throughput", "-1",
               "--producer-props", f"bootstrap.servers={bs}",
               *(f"{k}={v}" for k, v in sorted(props.items()))]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rate = float(re.findall(r"([\d.]+) records/sec", text)[-1])
        seconds, txns = n / rate, None
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--bare", client,
               "--bare-topic", topic, "--bootstrap-servers", bs, "--records", str(n),
               "--record-size", str(size), "--bare-config", json.dumps(props),
               "--bare-key-size", str(key_size), *(["--bare-callbacks"] if callbacks else [])]
        if transactional:
            cmd += ["--bare-txn-size", str(TXN_SIZE)]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        seconds, txns = json.loads(text.strip().splitlines()[-1])
        if transactional and end_offsets(bs, topic) - n != txns:
            raise RuntimeError(f"{client} bare loop: {txns} commits, log says otherwise")
    out = {"records": n, "seconds": seconds, "rate": n / seconds}
    if transactional:
        out.update(transactions=txns, txn_rate=txns / seconds, records_per_txn=n / txns)
    return out


# -- the bare loops (run in their own process) --------------------------------------------

def bare_kafka_python(bs: str, topic: str, n: int, size: int, config: dict,
                      txn_size: int | None, key_size: int,
                      callbacks: bool = False) -> tuple[float, int]:
    from kafka import KafkaProducer

    from producers.transactional import fast_txn_retries

    kwargs = dict(config)
    if txn_size:
        kwargs["transactional_id"] = f"cbench-kp-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=bs.split(","), **kwargs)
    partitions = sorted(producer.partitions_for(topic))
    value, key = b"x" * size, b"k" * key_size
    txns = 0
    if txn_size:
        fast_txn_retries(producer)
        producer.init_transactions()
    start = time.perf_counter()
    if txn_size:
        sent = 0
        while sent < n:
            producer.begin_transaction()
            for _ in range(min(txn_size, n - sent)):
                producer.send(topic, value, key, partition=partitions[sent % len(partitions)])
                sent += 1
            producer.commit_transaction()
            txns += 1
    elif callbacks:  # each send's outcome reaches the loop, as ProducerPerformance's do
        delivered = [0]

        def on_ack(_meta, delivered=delivered):
            delivered[0] += 1

        for i in range(n):
            producer.send(topic, value, key,
                          partition=partitions[i % len(partitions)]).add_callback(on_ack)
        producer.flush()
        if delivered[0] != n:
            raise RuntimeError(f"{delivered[0]} of {n} sends acknowledged")
    else:
        for i in range(n):
            producer.send(topic, value, key, partition=partitions[i % len(partitions)])
        producer.flush()
    seconds = time.perf_counter() - start
    producer.close()
    return seconds, txns


def bare_librdkafka(bs: str, topic: str, n: int, size: int, config: dict,
                    txn_size: int | None, key_size: int,
                    callbacks: bool = False) -> tuple[float, int]:
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": bs, **config}
    if txn_size:
        conf["transactional.id"] = f"cbench-rd-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    partitions = sorted(producer.list_topics(topic, timeout=30).topics[topic].partitions)
    value, key = b"x" * size, b"k" * key_size
    txns = 0
    delivered = [0]

    def on_delivery(err, _msg, delivered=delivered):
        if err is None:
            delivered[0] += 1

    # each produce's outcome reaches the loop (as ProducerPerformance's do), or nothing
    extra = {"on_delivery": on_delivery} if callbacks else {}

    def produce(i: int) -> None:
        while True:
            try:
                producer.produce(topic, value, key, partition=partitions[i % len(partitions)],
                                 **extra)
                producer.poll(0)
                return
            except BufferError:
                producer.poll(0.05)

    if txn_size:
        producer.init_transactions(60)
    start = time.perf_counter()
    if txn_size:
        sent = 0
        while sent < n:
            producer.begin_transaction()
            for _ in range(min(txn_size, n - sent)):
                produce(sent)
                sent += 1
            producer.commit_transaction(60)
            txns += 1
    else:
        for i in range(n):
            produce(i)
        producer.flush(60)
    seconds = time.perf_counter() - start
    if len(producer):
        raise RuntimeError(f"{len(producer)} messages still queued")
    if callbacks and delivered[0] != n:
        raise RuntimeError(f"{delivered[0]} of {n} messages delivered")
    return seconds, txns


# -- the run ----------------------------------------------------------------------------

def measure_cell(bs: str, client: str, mode: str, n: int, size: int, repeat: int,
                 run_dir: Path, min_seconds: float = 0) -> dict:
    gens, bares, cbs = [], [], []
    # the Python loops also with a delivery callback per record (ProducerPerformance, the
    # Java side, has one per send; a commit tells the transactional loops)
    with_cb = client != "java" and mode != "transactional"
    # the generator first (its history gives the bare loops their settings), then the
    # three alternate in turn order: drift on a shared machine, and whatever one run leaves
    # to the next (page cache, broker GC), fall on every side alike
    gens.append(run_generator(bs, client, mode, n, size, run_dir))
    if gens[0]["seconds"] < min_seconds:
        # a run of a second or less is one broker pause or log roll away from a 2x
        # difference: the cell's runs get enough records to last min_seconds, and this
        # first one, too short, is done again
        n = -(-int(n * min_seconds / max(gens[0]["seconds"], 0.01)) // 10_000) * 10_000
        gens = [run_generator(bs, client, mode, n, size, run_dir)]
    config, key_size = gens[0]["config"], gens[0]["key_size"]
    turns = [lambda: gens.append(run_generator(bs, client, mode, n, size, run_dir)),
             lambda: bares.append(run_bare(bs, client, mode, n, size, config, key_size))]
    if with_cb:
        turns.append(lambda: cbs.append(run_bare(bs, client, mode, n, size, config, key_size,
                                                 callbacks=True)))
    for i in range(repeat):
        order = turns if i % 2 == 0 else turns[::-1]
        for turn in order[1:] if i == 0 else order:
            turn()
    gen = statistics.median(g["rate"] for g in gens)
    bare = statistics.median(b["rate"] for b in bares)
    cb = statistics.median(b["rate"] for b in cbs) if cbs else None
    cell = {"client": client, "client_version": client_version(client), "mode": mode,
            "records": n, "record_size": size, "repeat": repeat,
            "generator_rate": gen, "bare_rate": bare, "ratio": gen / bare,
            "meets_target": gen / bare >= TARGET,
            "bare_callback_rate": cb, "ratio_callback": gen / cb if cb else None,
            "bare_callback_runs": cbs,
            "producer_config": gens[-1]["config"],
            "generator_runs": [{k: v for k, v in g.items() if k != "config"} for g in gens],
            "bare_runs": bares}
    if mode == "transactional":
        cell.update(
            generator_txn_rate=statistics.median(g["txn_rate"] for g in gens),
            bare_txn_rate=statistics.median(b["txn_rate"] for b in bares),
            generator_records_per_txn=statistics.median(g["records_per_txn"] for g in gens),
            bare_records_per_txn=statistics.median(b["records_per_txn"] for b in bares))
        cell["txn_rate_ratio"] = cell["generator_txn_rate"] / cell["bare_txn_rate"]
    return cell


def table(cells: list[dict]) -> str:
    lines = [f"{'client':<14}{'mode':<15}{'generator/s':>12}{'bare/s':>10}{'ratio':>7}"
             f"{'bare+cb/s':>11}{'ratio':>7}{'  txn/s gen / bare (rec/txn)':<34}{'>= 0.8':>7}"]
    for c in cells:
        txn = ""
        if c["mode"] == "transactional":
            txn = (f"  {c['generator_txn_rate']:.1f} / {c['bare_txn_rate']:.1f} "
                   f"({c['generator_records_per_txn']:.0f} / {c['bare_records_per_txn']:.1f})")
        cb = (f"{c['bare_callback_rate']:>11,.0f}{c['ratio_callback']:>7.2f}"
              if c.get("bare_callback_rate") else f"{'-':>11}{'-':>7}")
        lines.append(f"{c['client']:<14}{c['mode']:<15}{c['generator_rate']:>12,.0f}"
                     f"{c['bare_rate']:>10,.0f}{c['ratio']:>7.2f}{cb}{txn:<34}"
                     f"{'yes' if c['meets_target'] else 'NO':>7}")
    return "\n".join(lines)


def _terminate(signum, frame):  # SIGTERM stops like Ctrl-C: the cluster goes down
    raise KeyboardInterrupt


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=20000,
                   help="records per measurement, plain modes (default 20000)")
    p.add_argument("--txn-records", type=int, default=1000,
                   help="records per measurement, transactional mode (default 1000)")
    p.add_argument("--record-size", type=int, default=200)
    p.add_argument("--min-seconds", type=float, default=3,
                   help="plain cells whose first generator run lasts less get more records "
                        "a run, enough to last this long (0: never)")
    p.add_argument("--repeat", type=int, default=3,
                   help="generator/bare pairs per cell, interleaved, turn order alternating; "
                        "medians compared")
    p.add_argument("--clients", default=",".join(CLIENTS))
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--json", type=Path, help="write the results here as JSON")
    p.add_argument("--base-port", type=int, default=27100,
                   help="below 32768: ports in the ephemeral range can be taken by any client")
    p.add_argument("--state-dir", type=Path, default=ROOT / ".state" / "client-bench")
    p.add_argument("--bootstrap-servers",
                   help="use this running cluster (3 brokers) instead of starting one")
    p.add_argument("--bare", choices=("kafka-python", "librdkafka"), help=argparse.SUPPRESS)
    p.add_argument("--bare-topic", help=argparse.SUPPRESS)
    p.add_argument("--bare-config", help=argparse.SUPPRESS)
    p.add_argument("--bare-txn-size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--bare-key-size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--bare-callbacks", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.bare:
        loop = bare_kafka_python if a.bare == "kafka-python" else bare_librdkafka
        print(json.dumps(loop(a.bootstrap_servers, a.bare_topic, a.records, a.record_size,
                              json.loads(a.bare_config), a.bare_txn_size, a.bare_key_size,
                              a.bare_callbacks)))
        return 0
    clients, modes = a.clients.split(","), a.modes.split(",")
    unknown = [x for x in clients if x not in CLIENTS] + [m for m in modes if m not in MODES]
    if unknown:
        p.error(f"unknown client or mode: {', '.join(unknown)}")
    signal.signal(signal.SIGTERM, _terminate)
    started = None
    cells: list[dict] = []
    t0 = time.monotonic()
    try:
        if a.bootstrap_servers:
            bs = a.bootstrap_servers
        else:
            started = a.state_dir
            bs = cluster_up(a.base_port, a.state_dir)
        with tempfile.TemporaryDirectory() as tmp:
            if started is not None:  # brokers fresh from start-up run cold (JIT, page
                # cache): the first cell's first runs came out ~2x slower than its last
                n = max(a.records, 100_000)
                warm = run_generator(bs, clients[0], "at-least-once", n, a.record_size,
                                     Path(tmp))
                print(f"warm-up: {clients[0]} generator, {n:,} records at "
                      f"{warm['rate']:,.0f}/s (not counted)", flush=True)
            for client in clients:
                for mode in modes:
                    n = a.txn_records if mode == "transactional" else a.records
                    cells.append(measure_cell(bs, client, mode, n, a.record_size, a.repeat,
                                              Path(tmp),
                                              0 if mode == "transactional" else a.min_seconds))
                    c = cells[-1]
                    print(f"  {client} {mode} ({c['records']:,} records a run): "
                          f"generator {c['generator_rate']:,.0f}/s, "
                          f"bare {c['bare_rate']:,.0f}/s, ratio {c['ratio']:.2f}"
                          + (f"; bare with a delivery callback {c['bare_callback_rate']:,.0f}"
                             f"/s, ratio {c['ratio_callback']:.2f}"
                             if c.get("bare_callback_rate") else ""), flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if started is not None:
            cluster_down(started)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"\n{when}, {os.cpu_count()} cores, 3 local brokers, record {a.record_size} B, "
          f"{a.records} records per plain measurement (more where a run would last under "
          f"{a.min_seconds:g} s), {a.txn_records} per transactional "
          f"(transactions of {TXN_SIZE}), median of {a.repeat} interleaved pairs, "
          f"{time.monotonic() - t0:.0f} s in all")
    print(table(cells))
    print("ratio: against the bare loop without callbacks; ratio after bare+cb: against the "
          "bare loop with a delivery callback per record (ProducerPerformance's shape)")
    met = [f"{c['client']}/{c['mode']}" for c in cells if c["meets_target"]]
    missed = [f"{c['client']}/{c['mode']}" for c in cells if not c["meets_target"]]
    print(f"meet >= {TARGET}: {len(met)} of {len(cells)}"
          + (f"; below: {', '.join(missed)}" if missed else ""))
    for c in cells:
        if c["mode"] == "transactional" and abs(c["bare_records_per_txn"] - TXN_SIZE) > 1:
            print(f"{c['client']}/transactional: the bare side made transactions of "
                  f"{c['bare_records_per_txn']:.1f} records, the generator of {TXN_SIZE}: "
                  f"records/s ratio {c['ratio']:.2f} (favours bare), transactions/s ratio "
                  f"{c['txn_rate_ratio']:.2f} (favours the generator); at equal size it "
                  "lies between")
    if a.json:
        a.json.write_text(json.dumps({"date": when, "cpus": os.cpu_count(),
                                      "bootstrap_servers": bs, "target": TARGET,
                                      "txn_size": TXN_SIZE,
                                      "cells": cells}, indent=2, default=str))
        print(f"results: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
