"""One observer process (exactly-once sink) over a mixed topic and an open-transaction topic.

The tests share the process (Spark startup costs ~10 s) and run in file order; the last
one stops it with SIGTERM.
"""

from __future__ import annotations

import uuid
from collections import Counter
from types import SimpleNamespace

import pytest
from kafka import KafkaProducer

from streaming.observations import read_observations
from streaming.progress import read_progress
from tests.integration.streaming.conftest import (
    Written,
    new_run_id,
    observer,
    rows,
    stop_observer,
    write_foreign,
    write_plain,
    write_transactions,
)
from verifier.harness.topics import create_topics
from verifier.orchestration.drain import DrainIncomplete, drain, drain_to_file, read_drain
from verifier.rundata.records import RecordIdentity, encode_value
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 3


@pytest.fixture(scope="module")
def run(bootstrap, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("observer-run")
    run_id = new_run_id()
    suffix = uuid.uuid4().hex[:6]
    mixed, held = f"t-obs-mixed-{suffix}", f"t-obs-held-{suffix}"
    create_topics(bootstrap, {mixed: PARTITIONS, held: 1}, replication_factor=3)
    written = Written()
    write_plain(bootstrap, mixed, run_id, 2, PARTITIONS, written)
    write_foreign(bootstrap, mixed, 1, b"\x00\xffnot json", written)
    other = RecordIdentity("another-run", "plain-0", 1, 2, 0, None, False, 1)
    write_foreign(bootstrap, mixed, 2, encode_value(other), written)
    write_plain(bootstrap, mixed, run_id, 2, PARTITIONS, written, first_seq=2)
    write_transactions(bootstrap, mixed, run_id, [True, False, True, False], 2,
                       PARTITIONS, written)
    proc = observer(run_dir, bootstrap, [mixed, held], run_id)
    proc.start()
    ns = SimpleNamespace(run_dir=run_dir, run_id=run_id, mixed=mixed, held=held,
                         topics=[mixed, held], written=written, proc=proc)
    try:
        yield ns
    finally:
        if proc.alive:
            stop_observer(proc)


def _identities(run_dir, isolation, topic) -> Counter:
    table = read_observations(run_dir, "spark", isolation).to_pylist()
    return Counter((r["pid"], r["p"], r["seq"]) for r in table
                   if r["topic"] == topic and not r["foreign"])


def test_each_isolation_level_sees_what_it_should_once(bootstrap, run, plain_rows):
    result = drain_to_file(bootstrap, run.topics, run.run_dir, timeout=120)
    assert result.completed, run.proc.log_tail()
    assert read_drain(run.run_dir)["completed"]
    w = run.written
    committed = _identities(run.run_dir, "read_committed", run.mixed)
    uncommitted = _identities(run.run_dir, "read_uncommitted", run.mixed)
    assert w.aborted and w.committed  # the topic really holds both
    assert committed == Counter(w.committed)
    assert uncommitted == Counter(w.committed + w.aborted)
    plain = plain_rows(bootstrap, run.topics, run.run_id, run.run_dir)
    for iso in ("read_committed", "read_uncommitted"):
        spark = rows(run.run_dir, "spark", iso, run.mixed)
        assert len(set(spark)) == len(spark), f"{iso}: an offset delivered twice"
        assert spark == [r for r in plain[iso] if r[0] == run.mixed], iso


def test_foreign_records_are_flagged_not_dropped(run):
    assert run.proc.alive, run.proc.log_tail()
    for iso in ("read_committed", "read_uncommitted"):
        table = read_observations(run.run_dir, "spark", iso).to_pylist()
        mine = [r for r in table if r["topic"] == run.mixed]
        foreign = sorted((r["partition"], r["offset"]) for r in mine if r["foreign"])
        assert foreign == sorted(run.written.foreign), iso
        errors = {r["error"] for r in mine if r["foreign"]}
        assert any("another run" in e for e in errors) and len(errors) == 2, errors
        for partition, offset in run.written.foreign:
            # the observer went on past the foreign record in the same partition
            assert any(r["partition"] == partition and r["offset"] > offset
                       and not r["foreign"] for r in mine), (iso, partition)


def _position(run, isolation, topic) -> int:
    progress = read_progress(run.run_dir, isolation)
    return progress.position.get((topic, 0), 0) if progress else 0


def test_open_transaction_holds_read_committed_back(bootstrap, run):
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                             transactional_id=f"{run.run_id}-held",
                             transaction_timeout_ms=120000)
    producer.init_transactions()
    producer.begin_transaction()
    for seq in range(3):
        rid = RecordIdentity(run.run_id, "txn-held", 1, 0, seq, 0, False, 1)
        producer.send(run.held, encode_value(rid), partition=0)
    producer.flush()
    behind_txn = Written()  # a non-transactional record after the open transaction
    write_plain(bootstrap, run.held, run.run_id, 1, 1, behind_txn, pid="plain-held")
    try:
        with pytest.raises(DrainIncomplete, match=f"{run.held}-0 LSO 0 < HW 4") as info:
            drain(bootstrap, run.topics, run.run_dir, timeout=8)
        assert [(b["topic"], b["reason"]) for b in info.value.result.behind] == \
            [(run.held, "open transaction (LSO < high watermark)")]
        # read_uncommitted reads the open transaction; read_committed stays before it
        wait_until(lambda: (_position(run, "read_uncommitted", run.held) == 4, None),
                   timeout=60, what="read_uncommitted to pass the open transaction",
                   expected="position 4")
        assert _position(run, "read_committed", run.held) == 0
        assert not _identities(run.run_dir, "read_committed", run.held)
    finally:
        producer.commit_transaction()
        producer.close()
    result = drain(bootstrap, run.topics, run.run_dir, timeout=120)
    assert result.completed
    assert result.end_offsets["read_committed"][(run.held, 0)] == 5  # 3 + record + marker
    assert _identities(run.run_dir, "read_committed", run.held) == Counter(
        [("txn-held", 0, 0), ("txn-held", 0, 1), ("txn-held", 0, 2), ("plain-held", 0, 0)])


def test_sigterm_stops_cleanly(run):
    assert run.proc.alive, run.proc.log_tail()
    assert stop_observer(run.proc) == 0, run.proc.log_tail()
