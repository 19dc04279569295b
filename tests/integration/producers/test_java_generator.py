"""The Java generator (producers/java) on the real cluster: the same history format, record
values, restart policy and transactional flow as the kafka-python one."""

from __future__ import annotations

import pytest

from producers.config import MODES
from tests.integration.producers.helpers import (
    check_one_clean_session,
    copies,
    history,
    java_generator,
    read_log,
    run_to_end,
)
from tests.integration.producers.test_restarts import _epoch, _open_txn
from verifier.harness.topics import create_topics
from verifier.rundata import jvm
from verifier.rundata.records import decode_value, encode_value
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration

N = 300


@pytest.fixture(scope="module", autouse=True)
def _built():
    if not jvm.java_generator_built():
        pytest.skip("the Java generator is not built: run `make setup`")


@pytest.mark.parametrize("mode", MODES)
def test_every_ok_offset_holds_the_record_the_history_names(bootstrap, topic_name, tmp_path,
                                                            mode):
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = f"{mode}-0"
    extra = ["--txn-size", "25", "--abort-fraction", "0.25", "--seed", "3"] \
        if mode == "transactional" else []
    run_to_end(java_generator(pid, tmp_path, bootstrap, topic_name, mode, pid, "--count",
                              str(N), "--record-size", "300", *extra))

    h = check_one_clean_session(tmp_path, bootstrap, topic_name, mode, pid, N)
    session = next(e for e in h.events if e["type"] == "session")
    assert session["client"] == "java" and session["client_version"] == jvm.clients_version()
    idents = [e for e in h.events if e["type"] == "producer-id"]
    assert bool(idents) == (mode in ("idempotent", "transactional")), idents


@pytest.mark.parametrize("size", [1, 99, 300])
def test_record_keys_and_values_are_the_bytes_records_py_makes(bootstrap, topic_name,
                                                               tmp_path, size):
    """The Java generator writes each record's value and key byte for byte as
    verifier/rundata/records.py does: below the unpadded length (no pad), in the zone where
    the pad field itself overshoots the size (99: the 1-digit sequences; the 2-digit ones
    are then exactly unpadded), and padded."""
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = "enc-0"
    run_to_end(java_generator(pid, tmp_path, bootstrap, topic_name, "at-least-once", pid,
                              "--count", "60", "--record-size", str(size)))
    log = read_log(bootstrap, topic_name, "read_uncommitted", decode=bytes, keyed=True)
    assert len(log) == 60
    padded = set()
    for p, _, (key, value) in log:
        rid = decode_value(value)
        assert rid.p == p and value == encode_value(rid, size=size), value
        assert key == f"{pid}:{rid.p}:{rid.seq}".encode()
        padded.add(b'"pad":' in value)
    assert padded == ({False} if size == 1 else {True} if size == 300 else {True, False})


def test_transactional_kill_mid_transaction_and_restart(cluster, bootstrap, topic_name,
                                                         tmp_path):
    """SIGKILL mid-transaction, restart: the new session fences the old epoch (its
    producer-id line shows the bump), redoes the killed transaction with the same ids, and
    read_committed shows every committed record once."""
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid, tid = "transactional-0", "it.transactional-0"
    # 50/s: a 40-record transaction takes 0.8 s, so the kill lands inside it (at 200/s the
    # Java generator catching up on its schedule finished one in 80 ms)
    args = ["--txn-size", "40", "--rate", "50", "--abort-fraction", "0.25", "--seed", "4"]
    first = java_generator("txn-1", tmp_path, bootstrap, topic_name, "transactional", pid,
                           "--duration", "60", *args)
    first.start()
    try:
        txn, _, _ = wait_until(lambda: _open_txn(tmp_path, pid), timeout=90, interval=0.02,
                               max_interval=0.05, what="a transaction with acknowledged sends",
                               expected="begin ok, >= 3 sends ok, no commit/abort yet")
        first.kill()
    finally:
        if first.alive:
            first.kill()
    producer_id, epoch_before, _ = _epoch(bootstrap, tid)

    run_to_end(java_generator("txn-2", tmp_path, bootstrap, topic_name, "transactional", pid,
                              "--count", "80", *args))
    producer_id_after, epoch_after, state = _epoch(bootstrap, tid)
    assert (producer_id_after, epoch_after) > (producer_id, epoch_before), state

    h = history(tmp_path, pid)
    assert h.sessions == [1, 2]
    idents = [(e["ses"], e["producer_id"], e["epoch"]) for e in h.events
              if e.get("type") == "producer-id"]
    last_1 = [i for i in idents if i[0] == 1][-1]
    first_2 = next(i for i in idents if i[0] == 2)
    assert first_2[1] == last_1[1] and first_2[2] > last_1[2], \
        f"the restart keeps the producer id and bumps the epoch: {idents}"
    assert last_1[1:] == (producer_id, epoch_before) or last_1[2] <= epoch_before, idents
    begins = {(e["ses"], e["txn"]): e for e in h.events if e.get("f") == "begin"
              and e["type"] == "invoke"}
    committed = {e["txn"] for e in h.events if e.get("f") == "commit" and e["type"] == "ok"}
    assert txn in committed and (2, txn) in begins, "the killed transaction was redone"
    assert begins[(2, txn)]["recs"] == begins[(1, txn)]["recs"], "with the same ids"
    expected = {(pid, p, s) for (_, t), e in begins.items() if t in committed
                for p, s in e["recs"]}

    rc = copies(read_log(bootstrap, topic_name, "read_committed"))
    assert set(rc) == expected
    dupes = {i: [(c[0], c[1]) for c in cs] for i, cs in rc.items() if len(cs) > 1}
    assert not dupes, f"committed records seen more than once: {dupes}"
    assert not [i for i, cs in rc.items() for c in cs if c[2].abort or (c[2].ses, c[2].txn)
                == (1, txn)], "read_committed shows records of aborted transactions"
    ru = read_log(bootstrap, topic_name, "read_uncommitted")
    assert [rid for _, _, rid in ru if (rid.ses, rid.txn) == (1, txn)], \
        "the killed session's appended records are in the log, aborted"


def test_idempotent_restart_resends_what_was_not_acknowledged(bootstrap, topic_name,
                                                              tmp_path):
    """A second session re-sends, with the same ids, every send of the first that has no
    ok line (here: a history cut after the invokes), then continues the sequences."""
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = "idempotent-0"
    run_to_end(java_generator("idem-1", tmp_path, bootstrap, topic_name, "idempotent", pid,
                              "--count", "30"))
    path = tmp_path / "histories" / f"{pid}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # drop the ok lines of (0, 0) and (1, 0): as if the process died before their answer
    kept = [ln for ln in lines if not (b'"type":"ok"' in ln and b'"seq":0,' in ln
                                       and (b'"p":0,' in ln or b'"p":1,' in ln))]
    path.write_bytes(b"".join(kept))
    run_to_end(java_generator("idem-2", tmp_path, bootstrap, topic_name, "idempotent", pid,
                              "--count", "3"))
    h = history(tmp_path, pid)
    second = [(e["p"], e["seq"]) for e in h.events
              if e.get("ses") == 2 and e["type"] == "invoke" and e.get("f") == "send"]
    assert second == [(0, 0), (1, 0), (0, 10), (1, 10), (2, 10)], second
