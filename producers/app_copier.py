"""The copier presets of the applications under test (issue 47): a consume-transform-produce
loop on kafka-python in a real consumer group, in one of three commit strategies.

    python -m producers.app_copier --commit before|after|transactional

Everything else comes from the environment contract (verifier.rundata.apps,
docs/applications.md): ``VERIFIER_BOOTSTRAP_SERVERS``, ``VERIFIER_INPUT_TOPICS``,
``VERIFIER_OUTPUT_TOPIC``, ``VERIFIER_GROUP_ID``, ``VERIFIER_TRANSACTIONAL_ID_PREFIX``,
``VERIFIER_INSTANCE`` and ``VERIFIER_STATE_FILE``. Each instance subscribes to the input
topics (the group coordinator assigns their partitions and rebalances them when an
instance comes or goes) and copies every record's key, value and headers unchanged to the
output topic's partition of the same number (so the identity the tool's producers put
in the value or a header travels, and order per input partition is observable).

- ``before``: commit the polled batch's positions, then write it: a crash in between
  loses the batch (what auto-commit does at worst): at-most-once.
- ``after``: write the batch and flush, then commit: a crash in between writes it again
  when the partition's next owner resumes from the older offsets: at-least-once.
- ``transactional`` (KIP-447): the batch's records and its offsets in one transaction,
  the offsets sent with ``consumer.group_metadata()`` so the coordinator fences an
  instance whose partitions moved (a zombie): exactly-once at read_committed. Its two
  blocking calls give up after the producer's ``max_block_ms`` (producers.app_txn_wait),
  as the Java client's do; the copier then starts over with new clients.

The state file (JSON, replaced whole) says what the instance is doing: its partitions,
whether a transaction is open, the errors that made it start over (``errors``: a
commit refused after a rebalance, a fenced producer), and ``at_risk``: the records of
the batch between its two steps (commit-before: committed, not yet written;
commit-after: written, not yet committed; transactional: in the open transaction), and
``step``: ``processing`` in that window, then ``writing`` or ``committing`` once the
batch's second step has begun (a kill then may not undo it; with ``--process-ms 0`` the
window opens in it); a kill's detail reads it (the exposure of an instance kill). A
batch's end is written with the next write (the next batch's window, a rebalance) or
when a poll comes back empty.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

from producers import app_txn_wait as bounded

STRATEGIES = ("before", "after", "transactional")
POLL_MS = 200
MAX_RECORDS = 200  # per batch (and transaction)
#: how long processing a batch takes, between its two steps (``--process-ms``): a real
#: application's work; without it the window a kill must hit is a few milliseconds
PROCESS_MS = 200
#: how long the group waits for a member that stopped heartbeating (a SIGKILLed one)
#: before it moves its partitions: Kafka's default, 45 s, left a killed instance's
#: partitions unread until then and the scenario's second kill found nothing at risk
#: (the commit-before copier's second instance was next at risk 44.8 s after the first
#: kill). 10 s, as services that want a quick failover set it (the broker's minimum is 6 s)
SESSION_TIMEOUT_MS = 10_000


class State:
    """The instance's state file, replaced whole after every step that a trigger or an
    exposure reads (a few hundred bytes, but each replacement costs 0.25-0.7 ms on ext4
    here, which flushes a file renamed over another)."""

    def __init__(self, path: str | None, instance: str, strategy: str) -> None:
        self.path = Path(path) if path else None
        self.doc = {"instance": instance, "pid": os.getpid(), "strategy": strategy,
                    "assigned": [], "rebalances": 0, "in_transaction": False,
                    "at_risk": 0, "written": 0, "batches": 0, "step": "",
                    "errors": previous_errors(self.path)}
        self.unsaid = False  # fields updated ``later``, not yet on disk

    def update(self, *, later: bool = False, **fields) -> None:
        """``later``: on disk with the next update or :meth:`flush` (a batch's end: until
        then the file says its second step, which no trigger acts in and no exposure
        counts)."""
        self.doc.update(fields, t=round(time.time(), 3))
        self.unsaid = later
        if later or self.path is None:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(self.doc) + "\n")
        tmp.replace(self.path)

    def flush(self) -> None:
        """Write what an update ``later`` left unsaid, if anything."""
        if self.unsaid:
            self.update()


#: the errors a state file keeps (the latest): a zombie's refused commit is among them
KEEP_ERRORS = 10


def previous_errors(path: Path | None) -> list[dict]:
    """The errors an earlier run of this instance's loop reported (kept across its
    starting over: the instance-pause fault reads whether a zombie's commit was refused)."""
    try:
        doc = json.loads(path.read_text()) if path is not None else {}
    except (OSError, ValueError):
        return []
    return [e for e in doc.get("errors") or () if isinstance(e, dict)][-KEEP_ERRORS:]


def record_error(path: str | None, exc: BaseException) -> None:
    """Add ``exc`` to the state file's ``errors`` ({type, message, t, batches})."""
    if not path:
        return
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError):
        doc = {}
    # batches: how many this run of the loop had done (a zombie's batch done or not);
    # a call given up adds which and after how long (call, waited_s: app_txn_wait)
    more = exc.state_fields() if isinstance(exc, bounded.CommitGaveUp) else {}
    doc["errors"] = [*previous_errors(p), {"type": type(exc).__name__,
                                           "message": str(exc)[:300],
                                           "t": round(time.time(), 3),
                                           "batches": doc.get("batches"),
                                           **more}][-KEEP_ERRORS:]
    tmp = p.with_name(f".{p.name}.{os.getpid()}")
    tmp.write_text(json.dumps(doc) + "\n")
    tmp.replace(p)


def _listener(state: State, on_revoke):
    from kafka import ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            on_revoke()
            state.update(assigned=[], rebalances=state.doc["rebalances"] + 1)

        def on_partitions_assigned(self, assigned):
            state.update(assigned=sorted(f"{tp.topic}-{tp.partition}" for tp in assigned))

    return Listener()


def write(producer, output: str, batch: dict, out_partitions: int) -> list:
    """Each record's key, value and headers to the output partition of its number; the
    sends' futures."""
    return [producer.send(output, value=r.value, key=r.key, headers=list(r.headers or ()),
                          partition=tp.partition % out_partitions)
            for tp, records in batch.items() for r in records]


#: a batch's second step per strategy (the state's ``step`` once it has begun)
SECOND_STEP = {"before": "writing", "after": "committing", "transactional": "committing"}


def opening_step(strategy: str, process_ms: int) -> str:
    """The step a batch's window opens in: ``processing`` (the sleep), or straight its
    second step without processing time (nothing for a trigger to hit between the two
    steps, and one write of the state file instead of two)."""
    return "processing" if process_ms > 0 else SECOND_STEP[strategy]


def process(state: State, strategy: str, process_ms: int) -> None:
    """The processing time, then the second step said (if a processing step was)."""
    time.sleep(process_ms / 1000)
    if process_ms > 0:
        state.update(step=SECOND_STEP[strategy])


def run(strategy: str, env: dict[str, str], stop, process_ms: int = PROCESS_MS) -> None:
    """Copy until ``stop()`` is true (SIGTERM)."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata

    bootstrap = env["VERIFIER_BOOTSTRAP_SERVERS"].split(",")
    inputs = [t for t in env["VERIFIER_INPUT_TOPICS"].split(",") if t]
    output = env["VERIFIER_OUTPUT_TOPIC"]
    instance = env.get("VERIFIER_INSTANCE", "0")
    state = State(env.get("VERIFIER_STATE_FILE"), instance, strategy)
    transactional = strategy == "transactional"
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
        client_id=f"{env['VERIFIER_GROUP_ID']}.{instance}.producer",
        **({"transactional_id": env["VERIFIER_TRANSACTIONAL_ID_PREFIX"] + instance}
           if transactional else {}))
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=env["VERIFIER_GROUP_ID"],
        client_id=f"{env['VERIFIER_GROUP_ID']}.{instance}.consumer",
        enable_auto_commit=False, auto_offset_reset="earliest",
        isolation_level="read_committed", max_poll_records=MAX_RECORDS,
        session_timeout_ms=SESSION_TIMEOUT_MS)
    if transactional:
        producer.init_transactions()
    # a partition revoked mid-batch: nothing is open between two polls (each batch is
    # written and committed before the next poll), so a revoke has nothing to finish
    consumer.subscribe(inputs, listener=_listener(state, lambda: None))
    state.update()
    out_partitions = len(producer.partitions_for(output))
    limit_s = bounded.limit_of(producer)
    try:
        while not stop():
            batch = consumer.poll(timeout_ms=POLL_MS)
            if not batch:
                state.flush()  # the last batch's end, while no batch follows
                continue
            # the positions, not the last record's offset + 1: at read_committed a
            # transaction's marker (and aborted records) take offsets past it, and a group
            # that commits short of them never reaches the input's end
            offsets = {tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in batch}
            n = sum(len(r) for r in batch.values())
            # at_risk: the records a kill now would lose (before: committed, not yet
            # written), write again (after: written, not committed) or abort
            # (transactional: in the open transaction); the processing time falls
            # inside that window, between the batch's two steps
            # step: "processing" in the window, then the second step ("writing",
            # "committing"), which a kill may no longer undo (the trigger waits past it)
            opening = opening_step(strategy, process_ms)
            if strategy == "before":
                consumer.commit(offsets)
                state.update(at_risk=n, step=opening)
                process(state, strategy, process_ms)
                write(producer, output, batch, out_partitions)
                producer.flush()
            elif strategy == "after":
                sent = write(producer, output, batch, out_partitions)
                producer.flush()
                # a batch that expired fails its futures and flush() does not raise:
                # committing now would lose it (RecordsNotWritten starts over, main)
                failure = bounded.not_written(sent)
                if failure is not None:
                    raise failure
                state.update(at_risk=n, step=opening)
                process(state, strategy, process_ms)
                consumer.commit(offsets)
            else:
                producer.begin_transaction()
                sent = write(producer, output, batch, out_partitions)
                # flushed: at risk means in the log, uncommitted (a kill right after an
                # unflushed write left nothing to abort: 262 "at risk", 0 aborted read)
                producer.flush()
                # kafka-python leaves a transaction committable after a failed batch
                # (Java's would not): RecordsNotWritten starts over (main)
                failure = bounded.not_written(sent)
                if failure is not None:
                    raise failure
                state.update(at_risk=n, in_transaction=True, step=opening)
                process(state, strategy, process_ms)
                # bounded (kafka-python waits without a limit; it lost a TxnOffsetCommit
                # under group-coordinator-kill): CommitGaveUp starts over (main)
                bounded.finish(producer, offsets, consumer.group_metadata(), limit_s)
            # on disk with the next batch's window (or an empty poll): one write a batch
            # without processing time, not three (the Java twin's, StateFile.doneLater)
            state.update(at_risk=0, in_transaction=False, written=state.doc["written"] + n,
                         batches=state.doc["batches"] + 1, step="", later=True)
    finally:
        state.flush()
        consumer.close(autocommit=False)
        producer.close(timeout=10)


#: a batch's second step this long under way when the instance is asked to stop: stuck
#: (kafka-python's commit_transaction and send_offsets_to_transaction wait without a
#: limit; the group-coordinator-kill run of 2026-11-29 18:08 left one there for good
#: before they were bounded by app_txn_wait: kept for any other step that hangs)
STUCK_S = 5.0


def dump_if_stuck(path: str | None, now: float | None = None, out=None) -> bool:
    """At a stop: if the state file says a batch's second step began more than
    :data:`STUCK_S` ago, print that and every thread's stack (the instance's log shows
    where it waits). Whether it did."""
    try:
        doc = json.loads(Path(path).read_text()) if path else {}
    except (OSError, ValueError):
        return False
    age = (now if now is not None else time.time()) - float(doc.get("t") or 0)
    if doc.get("step") not in ("writing", "committing") or age <= STUCK_S:
        return False
    out = out or sys.stdout
    print(f"app_copier: stopped {age:.1f} s into step {doc['step']!r} (batch "
          f"{doc.get('batches')}, {doc.get('at_risk')} records): stuck; every thread:",
          file=out, flush=True)
    faulthandler.dump_traceback(file=out, all_threads=True)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m producers.app_copier",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", choices=STRATEGIES, required=True,
                        help="when the consumed offsets are committed")
    parser.add_argument("--process-ms", type=int, default=PROCESS_MS,
                        help="how long processing a batch takes (default %(default)s)")
    args = parser.parse_args(argv)
    missing = [k for k in ("VERIFIER_BOOTSTRAP_SERVERS", "VERIFIER_INPUT_TOPICS",
                           "VERIFIER_OUTPUT_TOPIC", "VERIFIER_GROUP_ID",
                           "VERIFIER_TRANSACTIONAL_ID_PREFIX") if not os.environ.get(k)]
    if missing:
        print(f"app_copier: the environment lacks {', '.join(missing)} "
              "(docs/applications.md)", file=sys.stderr)
        return 64
    stopping = []
    state_file = os.environ.get("VERIFIER_STATE_FILE")

    def on_term(*_) -> None:
        stopping.append(True)
        dump_if_stuck(state_file)

    signal.signal(signal.SIGTERM, on_term)
    # VERIFIER_COPIER_LOG=DEBUG: kafka-python's producer (its sender and transaction
    # manager: which coordinator each request went to) into the instance's log
    level = os.environ.get("VERIFIER_COPIER_LOG")
    if level:
        logging.basicConfig(stream=sys.stdout, format="%(asctime)s %(threadName)s "
                            "%(name)s %(levelname)s %(message)s")
        logging.getLogger("kafka.producer").setLevel(level.upper())
    # every thread's stack on demand (kill -USR1 <pid>), into the instance's log
    faulthandler.register(signal.SIGUSR1, file=sys.stdout, all_threads=True)
    while not stopping:
        try:
            run(args.commit, dict(os.environ), lambda: bool(stopping), args.process_ms)
        except Exception as exc:  # noqa: BLE001 - as a service would: log, start over
            # a commit refused after a rebalance (CommitFailedError), a fenced producer
            # (a newer instance took the transactional id), a transaction's step with no
            # answer within max_block_ms (CommitGaveUp), a record of the transaction not
            # written (RecordsNotWritten): new clients, the group's
            # committed offsets, go on; what was written and not committed is written
            # again (commit-after) or aborted (transactional: the new producer's
            # InitProducerId with the same transactional.id fences the old one and aborts
            # its open transaction)
            print(f"app_copier: {type(exc).__name__}: {exc}; starting over", flush=True)
            record_error(os.environ.get("VERIFIER_STATE_FILE"), exc)
            time.sleep(1.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
