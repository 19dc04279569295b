"""SIGKILL the observer inside a batch and restart it from its checkpoints.

The kill lands in the window between the sink writing batch N and Spark committing it
(``--hold-after-write-ms`` widens that window), so the checkpoint says batch N will be
re-run. The exactly-once sink must still hold every offset once; the naive sink must hold
exactly the rows it had written for the uncommitted batches twice, no more, no less. The
live checks go on across the kill without counting anything twice (issue 16).
"""

from __future__ import annotations

import uuid
from collections import Counter

import pyarrow.parquet as pq
import pytest

from streaming.live import batch_of, final, observation_files, read_summary
from streaming.progress import checkpoint_dir, read_progress
from streaming.sinks import batch_files
from tests.integration.streaming.conftest import (
    Written,
    kill_observer,
    new_run_id,
    observer,
    rows,
    stop_observer,
    write_plain,
    write_transactions,
)
from verifier.harness.topics import create_topics
from verifier.judge.definitions.stream import LiveChecks
from verifier.judge.model import ABORTED_READ, DUP_DELIVERY
from verifier.orchestration.drain import drain
from verifier.rundata.checkpoint import planned_end_offsets, uncommitted_batches
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 3
LEVELS = ("read_committed", "read_uncommitted")


def _in_hold_window(run_dir) -> tuple[bool, str]:
    """read_uncommitted has written a batch (past the first) that Spark has not committed."""
    progress = read_progress(run_dir, "read_uncommitted")
    if progress is None or progress.batch < 1:
        return False, f"progress {progress}"
    pending = uncommitted_batches(checkpoint_dir(run_dir, "read_uncommitted"))
    return progress.batch in pending, f"batch {progress.batch}, uncommitted {pending}"


def _written_before_kill(run_dir, isolation) -> dict[int, tuple[Counter, dict]]:
    """Per uncommitted batch: the (topic, partition, offset)s already in the sink, and the
    range the checkpoint planned for it."""
    ckpt = checkpoint_dir(run_dir, isolation)
    out = {}
    for batch in uncommitted_batches(ckpt):
        keys = Counter()
        for f in batch_files(run_dir, isolation, batch):
            t = pq.read_table(f, columns=["topic", "partition", "offset"]).to_pylist()
            keys.update((r["topic"], r["partition"], r["offset"]) for r in t)
        out[batch] = (keys, planned_end_offsets(ckpt, batch))
    return out


@pytest.mark.parametrize("sink", ["exactly-once", "at-least-once"])
def test_kill_and_restart(bootstrap, tmp_path, sink, plain_rows):
    run_id, topic = new_run_id(), f"t-obs-kill-{uuid.uuid4().hex[:6]}"
    create_topics(bootstrap, {topic: PARTITIONS}, replication_factor=3)
    written = Written()
    write_plain(bootstrap, topic, run_id, 300, PARTITIONS, written)
    write_transactions(bootstrap, topic, run_id, [True, True, False] * 4, 10, PARTITIONS,
                       written)
    # ~400 offsets per batch: several batches per query, so the kill lands mid-run
    common = ("--sink", sink, "--max-offsets-per-trigger", "400",
              "--live-producers", f"plain-0={topic},txn-0={topic}")
    first = observer(tmp_path, bootstrap, [topic], run_id, *common,
                     "--hold-after-write-ms", "1500", name="observer-1")
    first.start()
    try:
        wait_until(lambda: _in_hold_window(tmp_path), timeout=120,
                   what="read_uncommitted inside a written, uncommitted batch",
                   expected="progress batch in the uncommitted batches", interval=0.05,
                   max_interval=0.1)
    finally:
        kill_observer(first)
    before = {iso: _written_before_kill(tmp_path, iso) for iso in LEVELS}
    # evidence that the kill landed where it must: rows written, batch not committed
    assert sum(sum(k.values()) for k, _ in before["read_uncommitted"].values()) > 0, before

    second = observer(tmp_path, bootstrap, [topic], run_id, *common, name="observer-2")
    second.start()
    try:
        assert drain(bootstrap, [topic], tmp_path, timeout=150).completed
    finally:
        assert stop_observer(second) == 0, second.log_tail()

    plain = plain_rows(bootstrap, [topic], run_id, tmp_path)
    for iso in LEVELS:
        ckpt = checkpoint_dir(tmp_path, iso)
        for batch, (_keys, planned) in before[iso].items():
            # the replay re-ran the same range under the same id
            assert planned_end_offsets(ckpt, batch) == planned, (iso, batch)
        spark = rows(tmp_path, "spark", iso)
        # the live progress count spans both observer processes (a replay counts again)
        assert read_progress(tmp_path, iso).rows >= len(spark), iso
        counts = Counter(r[:3] for r in spark)
        assert sorted(set(spark), key=str) == plain[iso], f"{iso}: Spark and the log disagree"
        replayed = Counter()
        for keys, _ in before[iso].values():
            replayed.update(keys)
        duplicates = Counter({k: c - 1 for k, c in counts.items() if c > 1})
        if sink == "exactly-once":
            assert not duplicates, f"{iso}: {sum(duplicates.values())} delivery duplicates"
        else:
            # every row written before the kill for a batch the checkpoint had not
            # committed is there twice; nothing else is
            assert duplicates == replayed, (iso, sum(duplicates.values()),
                                            sum(replayed.values()))
        _live_counts_went_on(tmp_path, iso, sink, run_id, topic, replayed, written)


def _live_counts_went_on(run_dir, iso, sink, run_id, topic, replayed, written) -> None:
    """The live checks of both observer processes counted as one pass over the files the
    sink left, in the order it wrote them: nothing twice after the exactly-once replay,
    the naive replay's offsets once each as delivery duplicates."""
    topics = {"plain-0": topic, "txn-0": topic}
    ref = LiveChecks(run_id, iso, topics)
    for f in observation_files(run_dir, iso):
        ref.apply(pq.read_table(f), batch_of(f.name))
    summary = read_summary(run_dir, iso)
    assert (summary["anomalies"], summary["records"], summary["rows"]) == (
        ref.counts, ref.records, ref.rows), iso
    kinds = Counter()
    for by in summary["anomalies"].values():
        kinds.update(by)
    redelivered = len(replayed) if sink == "at-least-once" else 0
    aborted = len(written.aborted) if iso == "read_uncommitted" else 0
    assert dict(kinds) == {k: n for k, n in ((DUP_DELIVERY, redelivered),
                                             (ABORTED_READ, aborted)) if n}, iso
    assert summary["records"] == {"plain-0": 900, "txn-0": len(written.committed) - 900
                                  + (len(written.aborted) if aborted else 0)}, iso
    _, found = final(run_dir, iso, sink, run_id, topics)
    assert found.num_rows == sum(kinds.values()), iso
