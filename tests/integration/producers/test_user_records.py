"""A pipeline file's records written by each client's generator (issue 46) on the real
cluster, started as a run starts it (producers.clients.generator_argv, the plan's
``user_input``): record (p, seq) is ``make_record(topic, seq * partitions + p)`` with its
key, headers and timestamp, the identity in the ``verifier.id`` header and in the
value's ``ID_FIELD``, and every ``ok`` offset of the history holds the record it names."""

from __future__ import annotations

import orjson
import pytest
from kafka import KafkaConsumer, TopicPartition

from producers.clients import generator_argv
from producers.user_records import RecordMaker, load_records
from tests.integration.producers.helpers import history, run_to_end
from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics
from verifier.rundata import jvm
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.plan import PlannedProducer, RunPlan
from verifier.rundata.record_encoding import ID_HEADER
from verifier.rundata.records import decode_value
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

N = 90
PID = "in-orders-0"
#: the user's records: a key, a header of their own, an event time on every other record
#: and the identity in a field of the JSON value
PIPELINE = """
INPUT = {"orders": 3}
ID_FIELD = "vid"
ORACLE = "reference"
def make_record(topic, i):
    return {"key": f"customer-{i % 7}", "value": {"order_id": i, "topic": topic},
            "headers": {"source": f"shop-{i % 2}"},
            **({"timestamp": 1767225600000 + i} if i % 2 else {})}
def build(spark, source):
    return None
"""


def _plan(tmp_path, bootstrap: str, topic: str, client: str, mode: str):
    spec = tmp_path / "job.py"
    spec.write_text(PIPELINE)
    producer = PlannedProducer(PID, "input:orders", mode, topic, client=client)
    RunPlan("it", "user-records", 1, "exactly-once", bootstrap, {PID: producer},
            workload={"rate": None, "record_size": 200, "txn_size": 10,
                      "abort_fraction": 0.0},
            extra={"user_input": {PID: {"spec": str(spec), "topic": "orders",
                                        "partitions": 3}}}).write(tmp_path / "config.json")
    contract = load_records(str(spec))
    return RecordMaker(contract.make_record, "orders", 3, contract.id_field)


def _read(bootstrap: str, topic: str, n: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_id=None, isolation_level="read_committed")
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out: list = []

        def probe():
            for msgs in consumer.poll(timeout_ms=200).values():
                out.extend(msgs)
            return len(out) >= n, len(out)

        wait_until(probe, timeout=60, what=f"{n} records of {topic}", expected=str(n),
                   interval=0.01)
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("mode", ["idempotent", "transactional"])
@pytest.mark.parametrize("client", ["kafka-python", "java", "librdkafka"])
def test_each_client_writes_make_records_records_with_their_identity(
        bootstrap, topic_name, tmp_path, client, mode):
    if client == "java" and not jvm.java_generator_built():
        pytest.skip("the Java generator is not built: run `make setup`")
    if client == "librdkafka":
        pytest.importorskip("confluent_kafka")
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    maker = _plan(tmp_path, bootstrap, topic_name, client, mode)
    argv = generator_argv(client, tmp_path / "config.json", PID)
    run_to_end(ManagedProcess(PID, [*argv, "--count", str(N)], tmp_path / "logs" / "gen.log",
                              cwd=PROJECT_ROOT))

    records = _read(bootstrap, topic_name, N)
    assert len(records) == N
    seen = {}
    for m in records:
        assert m.headers and m.headers[-1][0] == ID_HEADER, \
            f"no identity header last: {m.headers}, value {m.value[:80]!r}"
        ident = m.headers[-1][1]
        rid = decode_value(ident)
        assert (rid.run, rid.pid, rid.p) == ("it", PID, m.partition)
        want = maker.sent(rid.p, rid.seq, ident)  # i = seq * 3 + p
        i = rid.seq * 3 + rid.p
        assert (m.key, m.value, list(m.headers)) == (want.key, want.value, list(want.headers))
        assert orjson.loads(m.value) == {"order_id": i, "topic": "orders",
                                         "vid": ident.decode()}
        if want.timestamp_ms is not None:
            assert m.timestamp == want.timestamp_ms == 1767225600000 + i
        seen[(m.partition, m.offset)] = (rid.p, rid.seq)
    # dense: every i from 0 to N-1 once
    assert sorted(s * 3 + p for p, s in seen.values()) == list(range(N))
    # the producer-side view: every ok offset holds the record its line names
    h = history(tmp_path, PID)
    session = next(e for e in h.events if e["type"] == "session")
    assert session["client"] == client
    oks = [e for e in h.events if e["type"] == "ok" and e["f"] == "send"]
    assert len(oks) == N
    assert {seen.get((e["p"], e["offset"])) for e in oks} == {(e["p"], e["seq"]) for e in oks}
