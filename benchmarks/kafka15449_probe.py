"""KAFKA-15449 by hand: what does a broker do with a TxnOffsetCommit that arrives after
its transaction aborted, and what can a reader see of it?

Not a benchmark: a probe on a real running cluster (``verifier cluster up``), kept beside
the benchmarks because it is run by hand and its output is quoted in docs/known-bugs.md.
The late request is the copier's own TxnOffsetCommit, captured as kafka-python built it
and sent again, unchanged, after the transaction's abort (what the proxy would release
late); nothing is mocked.

    .venv/bin/verifier cluster up --nodes 1 --kafka-version 3.6.2 --base-port 28000 \\
        --state-dir .state/helper-14/probe
    .venv/bin/python benchmarks/kafka15449_probe.py 127.0.0.1:28001

Steps: fill an input topic (3 partitions, 10 records each); T1 copies all 30 records,
sends its offsets (10 per partition) and aborts; once T1's abort marker is in the group's
``__consumer_offsets`` partition, the captured TxnOffsetCommit of T1 is sent again (the
late one); then a read_committed consumer of the group (as a restarted
copier would be) asks for its committed offsets; then T2 copies partition 0 only, commits
its offset, and the group's committed offsets are read again: a partition whose committed
offset is past records no committed transaction copied is a loss for a restarted copier.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.net.compat import KafkaNetClient
from kafka.producer import transaction_manager as tm_mod
from kafka.structs import OffsetAndMetadata

from verifier.harness.faults.marker_probe import group_partition
from verifier.harness.kafka_wire import WireError, ask, fetch_request, parse_fetch
from verifier.harness.topics import create_topics

PARTITIONS = 3
PER_PARTITION = 10


def _capture_txn_offset_commits() -> list:
    """Keep every TxnOffsetCommit request kafka-python builds (the one it sends)."""
    seen: list = []
    build = tm_mod.TxnOffsetCommitHandler._build_request

    def recording(self):
        req = build(self)
        seen.append(req)
        return req
    tm_mod.TxnOffsetCommitHandler._build_request = recording
    return seen


#: offsets.topic.num.partitions of the project's local clusters (Kafka's default is 50)
OFFSETS_PARTITIONS = 4


def _offsets_partition(group: str) -> int:
    """The __consumer_offsets partition of a group: Java's String.hashCode, Kafka's
    Utils.abs (Math.abs; until 2026-11-28 13:20 this read ``& 0x7fffffff``, which differs
    for a negative hash: the run whose log read found the partition empty), modulo the
    topic's partitions."""
    return group_partition(group, OFFSETS_PARTITIONS)


def _offsets_log(bootstrap: str, partition: int, pe) -> dict:
    """The group's ``__consumer_offsets`` partition as one Fetch v4 (read_uncommitted, from
    offset 0) shows it: high watermark, last stable offset (below the high watermark: an
    open transaction holds it), and the batches of the copier's producer id in order
    (``txn`` a transactional offset commit, ``abort``/``commit`` a marker)."""
    host, port = bootstrap.rsplit(":", 1)
    payload = fetch_request(1, "kafka15449-probe", "__consumer_offsets", partition, 0, 100)
    try:
        got = parse_fetch(ask(host, int(port), payload, 10), "__consumer_offsets", partition)
    except WireError:
        return {"error": "partition not in the answer"}
    ours = [f"{b.marker or 'txn'}@{b.base_offset} e{b.producer_epoch}"
            for b in got.batches if b.producer_id == pe.producer_id]
    return {"error": got.error_code, "high_watermark": got.high_watermark,
            "last_stable_offset": got.last_stable_offset, "copier_batches": ours}


def _committed(bootstrap: str, group: str, tps: list, isolation: str):
    """The group's committed offsets as a consumer of that isolation level fetches them
    (read_committed sends require_stable: pending transactional offsets make the broker
    answer UNSTABLE_OFFSET_COMMIT, which the client retries), or the error after 10 s."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, isolation_level=isolation,
                      enable_auto_commit=False)
    t0 = time.time()
    try:
        got = c._coordinator.fetch_committed_offsets(tps, timeout_ms=10000)
        return {str(tp.partition): o.offset for tp, o in sorted(got.items())}
    except Exception as exc:  # noqa: BLE001 - the answer is the finding
        return f"{type(exc).__name__} after {time.time() - t0:.1f} s"
    finally:
        c.close()


def main(bootstrap: str) -> dict:
    run = uuid.uuid4().hex[:8]
    src, dst, group, txn_id = f"in-{run}", f"out-{run}", f"g-{run}", f"copier-{run}"
    result: dict = {"bootstrap": bootstrap, "group": group}
    # the project's create: it waits until every partition has a leader (was a 1 s sleep)
    create_topics(bootstrap, {src: PARTITIONS, dst: PARTITIONS}, 1)
    plain = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            plain.send(src, value=f"{p}-{i}".encode(), partition=p)
    plain.flush()
    plain.close()

    captured = _capture_txn_offset_commits()
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    producer.init_transactions()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             isolation_level="read_committed", enable_auto_commit=False,
                             auto_offset_reset="earliest")
    tps = [TopicPartition(src, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    records = []
    deadline = time.time() + 20
    while len(records) < PARTITIONS * PER_PARTITION and time.time() < deadline:
        for msgs in consumer.poll(timeout_ms=500).values():
            records += msgs

    # T1: copy everything, send its offsets, abort
    producer.begin_transaction()
    for m in records:
        producer.send(dst, value=m.value, partition=m.partition)
    offsets = {tp: OffsetAndMetadata(PER_PARTITION, "", -1) for tp in tps}
    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    producer.abort_transaction()
    pe = producer._transaction_manager.producer_id_and_epoch
    result["producer"] = {"id": pe.producer_id, "epoch": pe.epoch}
    late = captured[-1]

    # the late TxnOffsetCommit: T1's own request, once T1's abort marker is in the group's
    # __consumer_offsets partition (the coordinator writes it after it answered EndTxn:
    # sent before it, the late request joins T1 and is aborted with it)
    part = _offsets_partition(group)
    deadline = time.time() + 30
    while time.time() < deadline:
        before = _offsets_log(bootstrap, part, pe)
        if any(b.startswith("abort@") for b in before.get("copier_batches", [])):
            break
        time.sleep(0.05)
    result["consumer_offsets_partition"] = {"partition": part, "before_late": before}
    # the group coordinator's broker id (the producer names it "coordinator-<id>"), on a
    # client of its own
    coord = producer._transaction_manager.coordinator(tm_mod.CoordinatorType.GROUP)
    node = int(str(coord).rsplit("-", 1)[-1])
    client = KafkaNetClient(bootstrap_servers=[bootstrap])
    client._manager.bootstrap()
    client.await_ready(node)
    resp = client.send_and_receive(node, late)
    result["late_txn_offset_commit"] = [
        {"partition": p, "error_code": e} for _, parts in resp.topics for p, e in parts]

    # the group's __consumer_offsets partition: last stable offset against the end
    result["consumer_offsets_partition"]["after_late"] = _offsets_log(bootstrap, part, pe)

    # a restarted copier: read_committed asks for stable offsets (KIP-447), and what the
    # group has committed without that (read_uncommitted: no require_stable)
    result["restart_fetch"] = _committed(bootstrap, group, tps, "read_committed")
    result["committed_after_late"] = _committed(bootstrap, group, tps, "read_uncommitted")

    # T2 copies partition 0 only (re-read after the abort) and commits its offset
    producer.begin_transaction()
    for m in records:
        if m.partition == 0:
            producer.send(dst, value=m.value, partition=0)
    producer.send_offsets_to_transaction({tps[0]: OffsetAndMetadata(PER_PARTITION, "", -1)},
                                         consumer.group_metadata())
    producer.commit_transaction()
    result["committed_after_t2"] = _committed(bootstrap, group, tps, "read_uncommitted")
    out = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                        auto_offset_reset="earliest", consumer_timeout_ms=3000)
    out.assign([TopicPartition(dst, p) for p in range(PARTITIONS)])
    copied: dict[int, int] = {}
    for m in out:
        copied[m.partition] = copied.get(m.partition, 0) + 1
    result["copies_committed"] = {str(p): copied.get(p, 0) for p in range(PARTITIONS)}
    result["consumer_offsets_partition"]["after_t2"] = _offsets_log(bootstrap, part, pe)
    out.close()
    consumer.close()
    producer.close()
    client.close()
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:28001"),
                     indent=1))
