"""An example stateful service for ``verifier chaos --app`` (docs/applications.md): a
kafka-python consumer that counts records per key and writes each key's count, judged by
the reference oracle (the same command run without faults over the same input).

    verifier chaos --app ".venv/bin/python examples/apps/python_counter.py" \\
        --app-guarantee at-least-once --app-oracle reference --scenario instance-kill

It reads ``VERIFIER_INPUT_TOPICS`` in the consumer group ``VERIFIER_GROUP_ID``. The
tool's input records are keyed ``<producer>:<partition>:<seq>``, one key per record, so it
counts per key *without* its last ``:`` part (per producer and partition; a key without
``:`` as it is, a record without a key under ``<topic>:<partition>``): a key lives on one
input partition, so one instance counts it at a time. After each batch it writes every
key the batch changed as ``key -> count`` (text) to ``VERIFIER_OUTPUT_TOPIC``, flushes,
then commits the consumed offsets: at-least-once, which is what it claims. Its counts live
in memory; when it is given partitions (its start, a rebalance, a restart after a kill)
it reads them back from its own output topic (each key's last count), so the records it
reads again after a crash are counted again (an over-count, tolerated under
at-least-once) and none is forgotten. It stops cleanly on SIGTERM.

It also says what it is doing in ``VERIFIER_STATE_FILE`` (optional in the contract; JSON
replaced whole): its ``pid``, the partitions ``assigned`` to it, and ``at_risk``, the
records of a batch written but not yet committed (``step`` ``processing`` while 50 ms of
"work" follow the flush), so the ``instance-kill`` trigger can kill it there and the
verdict can count what the kill acted on; without the file its exposure is not measured
and its columns cannot PASS.
"""

import json
import os
import signal
import time

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition

stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

bootstrap = os.environ["VERIFIER_BOOTSTRAP_SERVERS"].split(",")
output = os.environ["VERIFIER_OUTPUT_TOPIC"]
counts: dict[str, int] = {}
state = {"pid": os.getpid(), "assigned": [], "at_risk": 0, "step": ""}


def say(**fields) -> None:
    """The state file, replaced whole (when the environment names one)."""
    path = os.environ.get("VERIFIER_STATE_FILE")
    state.update(fields, t=round(time.time(), 3))
    if path:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, path)


def count_key(record) -> str:
    if record.key is None:
        return f"{record.topic}:{record.partition}"
    key = record.key.decode("utf-8", "replace")
    return key.rsplit(":", 1)[0] if ":" in key else key


def restore() -> dict[str, int]:
    """Each key's last count in the output topic, read from its start to its end."""
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                           enable_auto_commit=False, isolation_level="read_committed")
    try:
        deadline = time.monotonic() + 60
        while (parts := reader.partitions_for_topic(output)) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no metadata for {output}")
            time.sleep(0.5)
        tps = [TopicPartition(output, p) for p in sorted(parts)]
        reader.assign(tps)
        reader.seek_to_beginning(*tps)
        ends = reader.end_offsets(tps)
        last: dict[str, int] = {}
        while any(reader.position(tp) < ends[tp] for tp in tps):
            for records in reader.poll(timeout_ms=500).values():
                for r in records:
                    last[r.key.decode()] = int(r.value)
        return last
    finally:
        reader.close()


class Restore(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        say(assigned=[])  # every batch was flushed and committed before the next poll

    def on_partitions_assigned(self, assigned):
        try:
            restored = restore()
        except Exception as exc:  # the client would log it and go on counting from 0
            print(f"cannot read the counts back: {exc}", flush=True)
            os._exit(1)
        counts.clear()
        counts.update(restored)
        say(assigned=sorted(f"{tp.topic}-{tp.partition}" for tp in assigned))


consumer = KafkaConsumer(bootstrap_servers=bootstrap,
                         group_id=os.environ["VERIFIER_GROUP_ID"],
                         enable_auto_commit=False, auto_offset_reset="earliest",
                         isolation_level="read_committed")
consumer.subscribe(os.environ["VERIFIER_INPUT_TOPICS"].split(","), listener=Restore())
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
try:
    while not stopping:
        batch = consumer.poll(timeout_ms=200)
        changed = set()
        for records in batch.values():
            for r in records:
                key = count_key(r)
                counts[key] = counts.get(key, 0) + 1
                changed.add(key)
        for key in sorted(changed):
            producer.send(output, key=key.encode(), value=str(counts[key]).encode())
        if batch:
            producer.flush()
            # written, not committed: a kill now counts this batch again after the restart
            say(at_risk=sum(len(r) for r in batch.values()), step="processing")
            time.sleep(0.05)
            say(step="committing")
            consumer.commit()  # after the counts are written: at-least-once
            say(at_risk=0, step="")
finally:
    consumer.close(autocommit=False)
    producer.close(timeout=10)
