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
              *extra: str, module: str = "producers") -> ManagedProcess:
    """A ``python -m producers`` process (``module``: another Python client's generator),
    not started."""
    argv = [sys.executable, "-m", module, "--run-dir", str(run_dir), "--run-id", "it",
            "--mode", mode, "--pid", pid, "--topic", topic, "--bootstrap-servers", bootstrap,
            *extra]
    return ManagedProcess(name, argv, run_dir / "logs" / f"{name}.log", cwd=PROJECT_ROOT)


def java_generator(name: str, run_dir: Path, bootstrap: str, topic: str, mode: str, pid: str,
                   *extra: str) -> ManagedProcess:
    """A Java generator process with the standalone flags (not started); the test is
    skipped when the generator is not built."""
    import pytest

    from producers.clients import JAVA_MAIN, JAVA_OPTS
    from verifier.rundata import jvm

    if not jvm.java_generator_built():
        pytest.skip("the Java generator is not built: run `make setup`")
    argv = [jvm.java_executable(), *JAVA_OPTS, "-cp", jvm.java_generator_jars().classpath(),
            JAVA_MAIN, "--run-dir", str(run_dir), "--run-id", "it", "--mode", mode,
            "--pid", pid, "--topic", topic, "--bootstrap-servers", bootstrap, *extra]
    return ManagedProcess(name, argv, run_dir / "logs" / f"{name}.log", cwd=PROJECT_ROOT)


def client_generator(client: str, run_dir: Path, bootstrap: str, topic: str, mode: str,
                     pid: str, *extra: str) -> ManagedProcess:
    """``client``'s generator (kafka-python, java or librdkafka), named ``pid``, not
    started; skipped when that client is not available here."""
    if client == "java":
        return java_generator(pid, run_dir, bootstrap, topic, mode, pid, *extra)
    if client == "librdkafka":
        import pytest

        pytest.importorskip("confluent_kafka")
        return generator(pid, run_dir, bootstrap, topic, mode, pid, *extra,
                         module="producers.rdkafka")
    return generator(pid, run_dir, bootstrap, topic, mode, pid, *extra)


def run_to_end(proc: ManagedProcess, timeout: float = 90) -> None:
    proc.start()
    rc = proc.wait(timeout)
    assert rc == 0, f"{proc.name} exited {rc}:\n{proc.log_tail(40)}"


def history(run_dir: Path, pid: str) -> History:
    return read_history(history_path(run_dir, pid))


def check_one_clean_session(run_dir: Path, bootstrap: str, topic: str, mode: str, pid: str,
                            n: int) -> History:
    """A generator's single session of ``n`` sends on a healthy 3-partition topic: every
    send acknowledged, dense sequences round robin, every ``ok`` offset holding the record
    the history names and nothing else in the log; a seeded transactional run both commits
    and aborts. Returns the history for the client's own checks."""
    h = history(run_dir, pid)
    assert h.header["mode"] == mode and h.sessions == [1] and not h.torn_tail
    invokes = [e for e in h.events if e["type"] == "invoke" and e["f"] == "send"]
    oks = [e for e in h.events if e["type"] == "ok" and e["f"] == "send"]
    assert len(invokes) == n
    assert len(oks) == n, "a healthy cluster acknowledges every send"
    assert {(e["p"], e["seq"]) for e in oks} == {(e["p"], e["seq"]) for e in invokes}
    for p in range(3):  # dense sequence per partition, round robin over all three
        assert sorted(e["seq"] for e in invokes if e["p"] == p) == list(range(n // 3))
    acked: dict[int, int] = {}  # partition -> past its highest acknowledged offset
    for e in oks:
        if e["offset"] is not None:
            acked[e["p"]] = max(acked.get(e["p"], 0), e["offset"] + 1)
    log = {(p, off): rid for p, off, rid in read_log(bootstrap, topic, "read_uncommitted",
                                                     min_ends=acked)}
    for e in oks:
        rid = log.get((e["p"], e["offset"]))
        assert rid is not None, f"no record at partition {e['p']} offset {e['offset']}"
        assert (rid.run, rid.pid, rid.ses, rid.p, rid.seq, rid.txn) == \
            ("it", pid, 1, e["p"], e["seq"], e["txn"])
    assert len(log) == n
    if mode == "transactional":
        ends = [e for e in h.events if e.get("f") in ("commit", "abort") and e["type"] == "ok"]
        assert {e["f"] for e in ends} == {"commit", "abort"}, "seeded: some of each"
    return h


def read_log(bootstrap: str, topic: str, isolation: str, decode=decode_value,
             min_ends: dict[int, int] | None = None,
             keyed: bool = False) -> list[tuple[int, int, RecordIdentity]]:
    """Every record of ``topic`` from the beginning at ``isolation``:
    ``(partition, offset, decode(value))`` (the record's identity unless ``decode`` says
    otherwise; ``keyed``: ``(key, decode(value))`` in third place), read up to the end
    offsets of that level; with ``min_ends`` (partition ->
    offset) first waiting until the end offsets reach them: at acks=1 the leader answers
    before its followers have the record, and the end offset (the high watermark) can
    stay behind an acknowledged offset for a while on a loaded machine."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, group_id=None)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)

        def reached():
            ends = consumer.end_offsets(tps)
            return all(ends[tp] >= (min_ends or {}).get(tp.partition, 0) for tp in tps), ends

        ends = wait_until(reached, timeout=60, what=f"the end offsets of {topic}",
                          expected=f"at least {min_ends}", interval=0.1)
        out: list[tuple[int, int, RecordIdentity]] = []

        def probe():
            for msgs in consumer.poll(timeout_ms=200).values():
                out.extend((m.partition, m.offset,
                            (m.key, decode(m.value)) if keyed else decode(m.value))
                           for m in msgs)
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
