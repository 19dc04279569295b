"""Every compression codec on every client, checked where it counts: the record batches
in the broker's own log segment carry the codec the user set (`compression.type`), and
every record the generator sent is in them (issue 13)."""

from __future__ import annotations

import pytest
from kafka.record import MemoryRecords

from tests.integration.producers.helpers import client_generator, history
from verifier.harness.topics import create_topics
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

N = 40
#: the codec ids of the record batch attributes (KIP-98's v2 format)
CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _segment_batches(cluster, topic: str) -> list:
    """The record batches of partition 0 in the first replica's segment that has them
    all (read from the broker's data folder, as the broker wrote them)."""
    best: list = []
    for node in cluster.spec.node_ids:
        seg = cluster.folder.node_dir(node) / "data" / f"{topic}-0" / "00000000000000000000.log"
        if not seg.exists():
            continue
        records, batches = MemoryRecords(seg.read_bytes()), []
        while records.has_next():
            batches.append(records.next_batch())
        if sum(b.records_count for b in batches) > sum(b.records_count for b in best):
            best = batches
    return best


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("client", ["kafka-python", "java", "librdkafka"])
def test_every_codec_reaches_the_broker_on_every_client(cluster, bootstrap, topic_name,
                                                        tmp_path, client, codec):
    create_topics(bootstrap, {topic_name: 1}, replication_factor=3)
    pid = f"codec-{client}-{codec}"
    proc = client_generator(client, tmp_path, bootstrap, topic_name, "at-least-once", pid,
                            "--count", str(N), "--partitions", "0",
                            "--set", f"compression.type={codec}")
    proc.start()
    assert proc.wait(120) == 0, proc.log_tail(30)
    h = history(tmp_path, pid)
    assert sum(1 for e in h.events if e["type"] == "ok" and e["f"] == "send") == N

    def all_there():
        batches = _segment_batches(cluster, topic_name)
        return sum(b.records_count for b in batches) >= N, batches

    batches = wait_until(all_there, timeout=30, what=f"{N} records in a replica's segment",
                         expected=f"{N} records")
    assert {b.compression_type for b in batches} == {CODECS[codec]}, \
        [(b.base_offset, b.compression_type) for b in batches]
