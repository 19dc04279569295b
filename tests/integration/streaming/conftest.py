"""Helpers for the observer's integration tests: real topics, real observer processes."""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka import KafkaProducer

from streaming.observations import read_observations
from verifier.harness.procs import ManagedProcess
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.records import RecordIdentity, encode_value
from verifier.rundata.waiting import wait_until

#: columns both readers must agree on (reader, batch, observed_at and error text differ)
COMPARED = ("topic", "partition", "offset", "run", "pid", "ses", "p", "seq", "txn", "abort",
            "ts_send", "ts_broker", "foreign")


def new_run_id() -> str:
    return f"it-{uuid.uuid4().hex[:8]}"


def observer(run_dir: Path, bootstrap: str, topics: list[str], run_id: str,
             *extra: str, name: str = "observer") -> ManagedProcess:
    argv = [sys.executable, "-m", "streaming.observer", "--run-dir", str(run_dir),
            "--bootstrap-servers", bootstrap, "--topics", ",".join(topics),
            "--run-id", run_id, "--trigger-ms", "200", *extra]
    return ManagedProcess(name, argv, run_dir / "logs" / f"{name}.log", cwd=PROJECT_ROOT)


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (the observer's Spark JVM)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(c) for c in text.split()]


def kill_observer(proc: ManagedProcess) -> None:
    """SIGKILL the observer's Python driver, then wait until its JVM has gone too.

    The JVM exits on its own when its stdin (a pipe from the Python process) closes;
    until it has, it could still be touching the checkpoint.
    """
    jvms = children(proc.pid)
    proc.kill()
    wait_until(lambda: (not any(Path(f"/proc/{p}").exists() for p in jvms), jvms),
               timeout=60, what="the killed observer's JVM to exit", expected="no process",
               describe=lambda j: f"still running: {j}")


def stop_observer(proc: ManagedProcess) -> int | None:
    jvms = children(proc.pid) if proc.alive else []
    code = proc.terminate(timeout=60)
    wait_until(lambda: (not any(Path(f"/proc/{p}").exists() for p in jvms), jvms),
               timeout=60, what="the observer's JVM to exit", expected="no process")
    return code


def rows(run_dir: Path, reader: str, isolation: str, topic: str | None = None) -> list[tuple]:
    """Rows as sorted tuples of the COMPARED columns, optionally for one topic."""
    table = read_observations(run_dir, reader, isolation).select(list(COMPARED))
    out = [tuple(r.values()) for r in table.to_pylist()]
    return sorted((r for r in out if topic is None or r[0] == topic), key=str)


@dataclass
class Written:
    """What a test wrote to a topic: identities by outcome, foreign (partition, offset)s."""

    committed: list[tuple] = field(default_factory=list)  # incl. non-transactional
    aborted: list[tuple] = field(default_factory=list)
    foreign: list[tuple[int, int]] = field(default_factory=list)


def _rid(run_id: str, pid: str, p: int, seq: int, txn: int | None = None,
         abort: bool = False) -> RecordIdentity:
    return RecordIdentity(run_id, pid, 1, p, seq, txn, abort, int(time.time() * 1000))


def write_plain(bootstrap: str, topic: str, run_id: str, per_partition: int, partitions: int,
                written: Written, pid: str = "plain-0", first_seq: int = 0) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for seq in range(first_seq, first_seq + per_partition):
        for p in range(partitions):
            producer.send(topic, encode_value(_rid(run_id, pid, p, seq)), partition=p)
            written.committed.append((pid, p, seq))
    producer.flush()
    producer.close()


def write_foreign(bootstrap: str, topic: str, partition: int, value: bytes,
                  written: Written) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    meta = producer.send(topic, value, partition=partition).get(timeout=30)
    written.foreign.append((partition, meta.offset))
    producer.close()


def write_transactions(bootstrap: str, topic: str, run_id: str, outcomes: list[bool],
                       per_partition: int, partitions: int, written: Written,
                       pid: str = "txn-0") -> None:
    """One transaction per entry of ``outcomes`` (True = commit), across every partition."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{run_id}-{pid}",
                             enable_idempotence=True, transaction_timeout_ms=30000)
    producer.init_transactions()
    seq = dict.fromkeys(range(partitions), 0)
    for txn, commit in enumerate(outcomes):
        producer.begin_transaction()
        for _ in range(per_partition):
            for p in range(partitions):
                rid = _rid(run_id, pid, p, seq[p], txn, abort=not commit)
                producer.send(topic, encode_value(rid), partition=p)
                (written.committed if commit else written.aborted).append((pid, p, seq[p]))
                seq[p] += 1
        producer.flush()
        producer.commit_transaction() if commit else producer.abort_transaction()
    producer.close()


@pytest.fixture
def plain_rows():
    """Run the plain reader on a run and return its rows per isolation level."""
    from streaming.plain_reader import read_all

    def read(bootstrap: str, topics: list[str], run_id: str, run_dir: Path) -> dict:
        read_all(bootstrap, topics, run_id, run_dir, timeout=60)
        return {iso: rows(run_dir, "plain", iso) for iso in ("read_committed",
                                                             "read_uncommitted")}

    return read
