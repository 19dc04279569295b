"""Shared helpers: run a generator as its own process, read a topic back, read a history."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition

from verifier.harness.procs import ManagedProcess
from verifier.rundata.history import History, history_path, read_history
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.records import RecordIdentity, decode_value
from verifier.rundata.waiting import wait_until


def generator(name: str, run_dir: Path, bootstrap: str, topic: str, mode: str, pid: str,
              *extra: str) -> ManagedProcess:
    """A ``python -m producers`` process (not started)."""
    argv = [sys.executable, "-m", "producers", "--run-dir", str(run_dir), "--run-id", "it",
            "--mode", mode, "--pid", pid, "--topic", topic, "--bootstrap-servers", bootstrap,
            *extra]
    return ManagedProcess(name, argv, run_dir / "logs" / f"{name}.log", cwd=PROJECT_ROOT)


def run_to_end(proc: ManagedProcess, timeout: float = 90) -> None:
    proc.start()
    rc = proc.wait(timeout)
    assert rc == 0, f"{proc.name} exited {rc}:\n{proc.log_tail(40)}"


def history(run_dir: Path, pid: str) -> History:
    return read_history(history_path(run_dir, pid))


def read_log(bootstrap: str, topic: str, isolation: str) -> list[tuple[int, int, RecordIdentity]]:
    """Every record of ``topic`` from the beginning at ``isolation``:
    ``(partition, offset, identity)``, read up to the end offsets of that level."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, group_id=None)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[tuple[int, int, RecordIdentity]] = []

        def probe():
            for msgs in consumer.poll(timeout_ms=200).values():
                out.extend((m.partition, m.offset, decode_value(m.value)) for m in msgs)
            behind = {tp.partition: (consumer.position(tp), ends[tp]) for tp in tps
                      if consumer.position(tp) < ends[tp]}
            return not behind, behind

        wait_until(probe, timeout=60, what=f"reading {topic} at {isolation}",
                   expected=f"positions at the end offsets {ends}", interval=0.01)
        return out
    finally:
        consumer.close()


def copies(log) -> dict[tuple[str, int, int], list]:
    """identity (pid, p, seq) -> every (partition, offset, RecordIdentity) holding it."""
    by_id: dict[tuple[str, int, int], list] = defaultdict(list)
    for p, off, rid in log:
        by_id[(rid.pid, rid.p, rid.seq)].append((p, off, rid))
    return by_id
