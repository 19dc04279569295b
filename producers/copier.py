"""Read-process-write copier: consume an input topic, produce to an output topic, and
commit the consumed offsets inside the same transaction (``send_offsets_to_transaction``
with ``consumer.group_metadata()``).

Record identity of the copies (docs/formats.md §2.1): ``pid`` is the copier's logical id,
``p`` the output partition, which is the input partition (the output topic needs at least
as many partitions), and ``seq`` the **input offset**. A copier restarted after a crash
resumes from the offsets committed with its last committed transaction and re-reads the
rest, so a re-copied record has the same identity and a duplicate is visible. ``seq`` is
therefore not dense (transaction markers take input offsets).

The consumer uses ``assign`` (all input partitions) with the group id
``<run>.<pid>``: one copier per input topic, no rebalances, and the group's committed
offsets survive a restart.

Every transaction sends its offsets, also one meant to abort (it aborts after sending
them: an aborted transaction's offsets must not count), and each offset's metadata says
what the transaction is meant to do (``{"abort":true}``), as the generators' values do, so
the fault proxy can pick a TxnOffsetCommit of a transaction meant to abort (KAFKA-15449).
Which transactions abort: with ``--abort-fraction`` p up to one half, one at a random
place in each block of round(1/p) (:class:`AbortPlan`), so a stretch of a scenario's
window always holds one (independent draws at 0.1 left 40 commits in a row with seed 3,
and kafka-15449's hold found none in its 18 s); above one half, each one drawn alone.

It behaves as a real transactional consumer does: after a commit it goes on from its own
positions, after an abort it reads the aborted input again, and only a restarted copier
reads its group's committed offsets (kafka-python fetches them for assigned partitions
without a position, at read_committed). So committed offsets that are not its own (a
late TxnOffsetCommit an affected broker committed, KAFKA-15449) show as input skipped
only once the copier restarts: the kafka-15449 scenario kills it after the next commit.
"""

from __future__ import annotations

import random

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from producers import config as cfg
from producers.resume import PlannedTxn
from producers.transactional import TxnResult, TxnRunner
from verifier.rundata.errors import UsageError

#: bytes a fetch takes of one partition per record of a transaction: a record and its
#: batch's header (the input's batches hold a record or two)
FETCH_BYTES_PER_RECORD = 300


def fetch_bytes(txn_size: int, record_size: int) -> int:
    """``max_partition_fetch_bytes``: about one transaction's records of each partition
    per fetch, so the copier takes the input partitions in turn, as a consumer that keeps
    up does. With kafka-python's 1 MiB it took one partition's whole backlog first: a
    copier restarted behind its input copied one partition for the rest of a 24-s run
    (kafka-15449, 2026-11-29). The broker still returns a larger first batch whole."""
    return max(1024, txn_size * (record_size + FETCH_BYTES_PER_RECORD))


def _consumer(session) -> tuple[KafkaConsumer, list[TopicPartition]]:
    spec = session.spec
    extra = cfg.client_security(spec.settings)
    consumer = KafkaConsumer(bootstrap_servers=spec.bootstrap_servers.split(","),
                             group_id=f"{spec.run_id}.{spec.pid}",
                             isolation_level="read_committed", enable_auto_commit=False,
                             auto_offset_reset="earliest",
                             max_partition_fetch_bytes=fetch_bytes(
                                 spec.txn_size, int(spec.settings.get("record_size") or 100)),
                             **extra)
    parts = consumer.partitions_for_topic(spec.input_topic)
    if not parts:
        consumer.close()
        raise UsageError(f"input topic {spec.input_topic} does not exist")
    tps = [TopicPartition(spec.input_topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    return consumer, tps


class AbortPlan:
    """Which of a session's transactions are meant to abort, from its seeded ``rng``.

    ``fraction`` in (0, 0.5]: one abort at a random place in each block of
    ``round(1/fraction)`` transactions (the same share, and never more than
    ``2 * block - 2`` commits in a row); otherwise each transaction is drawn alone."""

    def __init__(self, rng: random.Random, fraction: float):
        self.rng, self.fraction = rng, fraction
        self.block = round(1 / fraction) if 0 < fraction <= 0.5 else 0
        self.index, self.place = 0, -1

    def next(self) -> bool:
        if not self.block:
            return self.rng.random() < self.fraction
        at = self.index % self.block
        if at == 0:
            self.place = self.rng.randrange(self.block)
        self.index += 1
        return at == self.place


def copy_loop(session, runner: TxnRunner) -> None:
    """Copy in transactions of up to ``--txn-size`` records until the budget or a stop."""
    consumer, tps = _consumer(session)
    try:
        out_parts = session.partitions(runner.producer)
        missing = sorted({tp.partition for tp in tps} - set(out_parts))
        if missing:
            raise UsageError(f"output topic {session.spec.topic} lacks partitions {missing} "
                             "of the input topic (the copier keeps the partition)")
        session.open_history(out_parts)
        runner.em = session.emitter(runner.producer)
        aborts = AbortPlan(random.Random(f"{session.spec.seed}:{session.spec.pid}:{session.ses}"),
                           session.spec.abort_fraction)
        next_txn = session.resume.next_txn
        while session.running():
            batch = _poll(consumer, session)
            if not batch:
                continue
            start = {}
            for m in batch:
                start.setdefault(m.partition, m.offset)
            txn = PlannedTxn(next_txn, aborts.next(),
                             tuple((m.partition, m.offset) for m in batch))
            next_txn += 1
            intent = '{"abort":true}' if txn.abort else '{"abort":false}'
            offsets = {TopicPartition(session.spec.input_topic, p):
                       OffsetAndMetadata(max(s for q, s in txn.recs if q == p) + 1, intent, -1)
                       for p in start}
            result, replace = runner.run(txn, offsets=(offsets, consumer.group_metadata()))
            if result is TxnResult.COMMITTED:
                session.new_records += len(batch)
            else:  # aborted (on purpose or not): read the same input again
                for p, off in start.items():
                    consumer.seek(TopicPartition(session.spec.input_topic, p), off)
            if replace and not session.stop.is_set():
                runner.connect()
    finally:
        consumer.close()


def _poll(consumer: KafkaConsumer, session) -> list:
    left = session.remaining()
    size = session.spec.txn_size if left is None else min(session.spec.txn_size, left)
    polled = consumer.poll(timeout_ms=500, max_records=size)
    return [m for msgs in polled.values() for m in msgs]


def run_copier(session) -> None:
    """The copier's session: a transactional producer and :func:`copy_loop` until the
    budget or a stop."""
    runner = TxnRunner(session)
    try:
        runner.connect()
        copy_loop(session, runner)
    finally:
        runner.close()
