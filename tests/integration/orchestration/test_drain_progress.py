"""The drain on a real cluster and a real observer (issue 38): on a machine loaded by a CPU
hog an observer still reading at the deadline is waited for while it advances, and the
run is judged instead of ending UNKNOWN; a transaction that never ends leaves only its own
partition incomplete, the others judged.

One observer process (its Spark startup costs ~10-30 s) over a topic with a backlog and a
topic for the open transaction; the tests run in file order.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from kafka import KafkaProducer

from streaming.progress import read_progress
from tests.integration.streaming.conftest import (
    Written,
    new_run_id,
    observer,
    stop_observer,
    write_plain,
)  # fmt: skip
from verifier.harness.topics import create_topics
from verifier.judge.checks.load import load_drain
from verifier.judge.model import OBSERVER
from verifier.orchestration.drain import DrainIncomplete, drain_to_file
from verifier.rundata.layout import layout
from verifier.rundata.records import RecordIdentity, encode_value
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

ISOS = ("read_committed", "read_uncommitted")
PARTITIONS = 3
PER_PARTITION = 1000
#: offsets per micro-batch: the backlog takes ~100 batches a level, far past the deadline
MAX_OFFSETS = 30
DEADLINE_S = 20.0


@pytest.fixture(scope="module")
def run(bootstrap, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("drain-run")
    run_id = new_run_id()
    suffix = uuid.uuid4().hex[:6]
    backlog, held = f"t-drain-backlog-{suffix}", f"t-drain-held-{suffix}"
    create_topics(bootstrap, {backlog: PARTITIONS, held: 1}, replication_factor=3)
    write_plain(bootstrap, backlog, run_id, PER_PARTITION, PARTITIONS, Written())
    proc = observer(run_dir, bootstrap, [backlog, held], run_id,
                    "--max-offsets-per-trigger", str(MAX_OFFSETS))
    proc.start()
    try:
        yield SimpleNamespace(run_dir=run_dir, run_id=run_id, backlog=backlog, held=held,
                              topics=[backlog, held], proc=proc)
    finally:
        if proc.alive:
            stop_observer(proc)


@contextmanager
def cpu_hog(n: int = 1):
    """``n`` busy-loop processes (one of the machine's 2 cores: under pytest-xdist the other
    worker's tests share the machine, and two hogs slowed them for the whole drain)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def _serving(run) -> None:
    """Until the observer has written its first batch at both levels."""
    wait_until(lambda: (all(read_progress(run.run_dir, iso) for iso in ISOS), None),
               timeout=300, what="the observer's first batch at both levels",
               expected="a progress file per level", describe=lambda _: run.proc.log_tail(3))


def test_an_observer_still_reading_at_the_deadline_is_waited_for(bootstrap, run):
    with cpu_hog():
        _serving(run)
        # the cap is wide here: this checks the extension, the unit tier checks the cap
        result = drain_to_file(bootstrap, run.topics, run.run_dir, timeout=DEADLINE_S,
                               cap_factor=30)
    assert result.completed, run.proc.log_tail()
    assert result.extended_s > 0, "the observer had read everything by the deadline"
    written = load_drain(layout(run.run_dir).drain)
    assert written.completed
    assert written.incomplete_where(set(run.topics), ISOS, {OBSERVER}) == []
    moved = result.to_json()["readers_moved_at"]
    assert all(moved[f"observer/{iso}"] > DEADLINE_S for iso in ISOS), moved


def test_a_transaction_that_never_ends_leaves_only_its_partition_incomplete(bootstrap, run):
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                             transactional_id=f"{run.run_id}-hanging",
                             transaction_timeout_ms=600_000)  # longer than the drain
    producer.init_transactions()
    producer.begin_transaction()
    for seq in range(3):
        rid = RecordIdentity(run.run_id, "txn-hanging", 1, 0, seq, 0, False, 1)
        producer.send(run.held, encode_value(rid), partition=0)
    producer.flush()
    try:
        def ru_at_hw():
            progress = read_progress(run.run_dir, "read_uncommitted")
            return bool(progress and progress.position.get((run.held, 0)) == 3), None

        wait_until(ru_at_hw, timeout=120, what="read_uncommitted to read the open transaction",
                   expected="position 3")
        with pytest.raises(DrainIncomplete, match=f"{run.held}-0 LSO 0 < HW 3") as info:
            drain_to_file(bootstrap, run.topics, run.run_dir, timeout=8)
    finally:
        producer.abort_transaction()
        producer.close()
    result = info.value.result
    # read_uncommitted read the open transaction; read_committed stays at its LSO (0)
    assert [(b["topic"], b["reason"]) for b in result.behind] == \
        [(run.held, "open transaction (LSO < high watermark)")], result.behind
    drain = load_drain(layout(run.run_dir).drain)
    assert not drain.completed
    assert drain.incomplete_where({run.backlog}, ISOS, {OBSERVER, "plain"}) == []
    assert drain.incomplete_where({run.held}, ISOS, {OBSERVER}) == [
        f"{run.held}-0 read_committed (open transaction)"]
    assert not drain.incomplete(run.held, 0, OBSERVER, "read_uncommitted")
