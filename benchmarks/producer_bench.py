"""Generator overhead benchmark (DESIGN §9; not a test).

Per mode, on the same broker, record size and acks, measured side by side in one run:

- the generator (``python -m producers``): records / (last completion - first invoke),
  from its own history, so process start-up and bootstrap are not counted;
- kafka-python's own ``python -m kafka.benchmarks.producer_performance``: records /
  its printed "Execution time" (also excludes producer construction);
- Kafka's Java ``org.apache.kafka.tools.ProducerPerformance`` for scale.

The ratio generator / kafka-python is the figure with a target (>= 0.8). The
transactional generator runs transactions of ``--txn-size`` records (default 1000);
kafka-python's benchmark has no transactional mode, so for that row the kafka-python
figure is a bare kafka-python loop in its own process (``begin_transaction``, the same
number of ``send`` calls of a fixed value, ``commit_transaction``; no history, no
per-record callbacks), timed the same way. Usage::

    .venv/bin/python benchmarks/producer_bench.py --bootstrap-servers 127.0.0.1:21501 \
        [--records 50000] [--record-size 200]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verifier.harness.topics import create_topics, delete_topics  # noqa: E402
from verifier.rundata.history import history_path, read_history  # noqa: E402

# per mode: (generator --set items, kafka-python benchmark -c items, Java producer props)
MODES = {
    "at-most-once": (["acks=1"], ["acks=1", "retries=0", "enable_idempotence=False"],
                     ["acks=1", "retries=0", "enable.idempotence=false"]),
    "at-least-once": (["acks=all"], ["acks=all", "enable_idempotence=False"],
                      ["acks=all", "enable.idempotence=false"]),
    "idempotent": (["acks=all"], ["acks=all", "enable_idempotence=True"],
                   ["acks=all", "enable.idempotence=true"]),
    "transactional": (["acks=all"], ["acks=all", "enable_idempotence=True"],
                      ["acks=all", "enable.idempotence=true"]),
}
COMMON_KP = ["linger_ms=5", "batch_size=16384"]
COMMON_JAVA = ["linger.ms=5", "batch.size=16384"]


#: every topic this process created, deleted when it ends (the cluster is the user's)
CREATED: list[str] = []


def _topic(bs: str, mode: str) -> str:
    name = f"bench-{mode}-{uuid.uuid4().hex[:6]}"
    create_topics(bs, {name: 3}, replication_factor=1)
    CREATED.append(name)
    return name


def generator_rate(bs: str, mode: str, n: int, size: int, txn_size: int, run_dir: Path) -> float:
    topic = _topic(bs, mode)
    pid = f"{mode}-{topic[-6:]}"
    sets = [x for s in MODES[mode][0] + ["linger.ms=5", "batch.size=16384"] for x in ("--set", s)]
    cmd = [sys.executable, "-m", "producers", "--run-dir", str(run_dir), "--run-id", "bench",
           "--mode", mode, "--pid", pid, "--topic", topic, "--bootstrap-servers", bs,
           "--count", str(n), "--record-size", str(size), "--txn-size", str(txn_size), *sets]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    events = read_history(history_path(run_dir, pid)).events
    first = next(e["t"] for e in events if e["type"] == "invoke")
    last = max(e["t"] for e in events)
    oks = sum(1 for e in events if e.get("f") == "send" and e["type"] == "ok")
    assert oks == n, f"{mode}: {oks} of {n} sends ok"
    return n / ((last - first) / 1000)


def kafka_python_rate(bs: str, mode: str, n: int, size: int) -> float:
    topic = _topic(bs, mode)
    cmd = [sys.executable, "-m", "kafka.benchmarks.producer_performance", "-b", *bs.split(","),
           "-t", topic,
           "--num-records", str(n), "--record-size", str(size), "--stats-interval", "60",
           "-c", *MODES[mode][1], *COMMON_KP]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    secs = float(re.search(r"Execution time: ([\d.]+) secs", out).group(1))
    return n / secs


def kafka_python_txn_rate(bs: str, n: int, size: int, txn_size: int) -> float:
    topic = _topic(bs, "transactional")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--bootstrap-servers", bs,
           "--kp-txn", topic, "--records", str(n), "--record-size", str(size),
           "--txn-size", str(txn_size)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def _kp_txn_loop(bs: str, topic: str, n: int, size: int, txn_size: int) -> float:
    """Bare kafka-python transactions (the reference the generator is compared with)."""
    import time

    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bs.split(","), acks="all",
                             enable_idempotence=True, linger_ms=5, batch_size=16384,
                             transactional_id=f"bench-kp-{uuid.uuid4().hex[:6]}")
    producer.init_transactions()
    value = b"x" * size
    start = time.perf_counter()
    sent = 0
    while sent < n:
        producer.begin_transaction()
        for _ in range(min(txn_size, n - sent)):
            producer.send(topic, value)
            sent += 1
        producer.commit_transaction()
    seconds = time.perf_counter() - start
    producer.close()
    return n / seconds


def java_rate(bs: str, mode: str, n: int, size: int) -> float:
    topic = _topic(bs, mode)
    cp = str(ROOT / ".jars" / "kafka-tools-4.1.1" / "*")
    cmd = ["java", "-Xmx512m", "-cp", cp, "org.apache.kafka.tools.ProducerPerformance",
           "--topic", topic, "--num-records", str(n), "--record-size", str(size),
           "--throughput", "-1", "--producer-props", f"bootstrap.servers={bs}",
           *MODES[mode][2], *COMMON_JAVA]
    if mode == "transactional":
        cmd += ["--transactional-id", f"bench-{uuid.uuid4().hex[:6]}",
                "--transaction-duration-ms", "100"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.findall(r"([\d.]+) records/sec", out)[-1])


@contextlib.contextmanager
def _deleting_topics(bs: str):
    try:
        yield
    finally:
        if CREATED:
            delete_topics(bs, CREATED)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--records", type=int, default=50000)
    p.add_argument("--record-size", type=int, default=200)
    p.add_argument("--txn-size", type=int, default=1000)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--no-java", action="store_true")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs of each side per mode, interleaved; the medians are compared")
    p.add_argument("--kp-txn", metavar="TOPIC", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.kp_txn:
        print(_kp_txn_loop(a.bootstrap_servers, a.kp_txn, a.records, a.record_size,
                           a.txn_size))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp, _deleting_topics(a.bootstrap_servers):
        for mode in a.modes.split(","):
            gens, kps = [], []
            for _ in range(a.repeat):  # interleaved, so drift on a shared machine hits both
                kps.append(kafka_python_txn_rate(a.bootstrap_servers, a.records,
                                                 a.record_size, a.txn_size)
                           if mode == "transactional" else
                           kafka_python_rate(a.bootstrap_servers, mode, a.records,
                                             a.record_size))  # fmt: skip
                gens.append(generator_rate(a.bootstrap_servers, mode, a.records,
                                           a.record_size, a.txn_size, Path(tmp)))
            jv = None if a.no_java else java_rate(a.bootstrap_servers, mode, a.records,
                                                   a.record_size)
            rows.append((mode, statistics.median(gens), statistics.median(kps), jv))
    print(f"\n{a.records} records of {a.record_size} B, linger.ms=5, batch.size=16384, "
          f"median of {a.repeat} interleaved runs per side, "
          f"brokers {a.bootstrap_servers}")
    print(f"{'mode':<15}{'generator/s':>13}{'kafka-python/s':>16}{'ratio':>8}{'java/s':>12}"
          f"{'gen/java':>10}")
    for mode, gen, kp, jv in rows:
        java = f"{jv:>12,.0f}{gen / jv:>10.2f}" if jv else f"{'-':>12}{'-':>10}"
        flag = "" if gen / kp >= 0.8 else "  < 0.8 target"
        print(f"{mode:<15}{gen:>13,.0f}{kp:>16,.0f}{gen / kp:>8.2f}{java}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
