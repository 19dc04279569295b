"""The librdkafka generator (producers/rdkafka.py, confluent-kafka) on the real cluster:
the same history format, record values, restart policy and transactional flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from producers.config import MODES
from tests.integration.producers.helpers import (
    check_one_clean_session,
    copies,
    generator,
    history,
    read_log,
    run_to_end,
)
from tests.integration.producers.test_restarts import _open_txn
from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration
pytest.importorskip("confluent_kafka")

N = 300


def rd_generator(name: str, run_dir: Path, bootstrap: str, topic: str, mode: str, pid: str,
                 *extra: str) -> ManagedProcess:
    return generator(name, run_dir, bootstrap, topic, mode, pid, *extra,
                     module="producers.rdkafka")


@pytest.mark.parametrize("mode", MODES)
def test_every_ok_offset_holds_the_record_the_history_names(bootstrap, topic_name, tmp_path,
                                                            mode):
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = f"{mode}-0"
    extra = ["--txn-size", "25", "--abort-fraction", "0.25", "--seed", "3"] \
        if mode == "transactional" else []
    run_to_end(rd_generator(pid, tmp_path, bootstrap, topic_name, mode, pid, "--count",
                            str(N), "--record-size", "300", *extra))
    h = check_one_clean_session(tmp_path, bootstrap, topic_name, mode, pid, N)
    session = next(e for e in h.events if e["type"] == "session")
    assert session["client"] == "librdkafka" and session["config"]["acks"] in (1, "all")


def test_transactional_kill_mid_transaction_and_restart(cluster, bootstrap, topic_name,
                                                         tmp_path):
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = "transactional-0"
    args = ["--txn-size", "40", "--rate", "50", "--abort-fraction", "0.25", "--seed", "4"]
    first = rd_generator("txn-1", tmp_path, bootstrap, topic_name, "transactional", pid,
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
    run_to_end(rd_generator("txn-2", tmp_path, bootstrap, topic_name, "transactional", pid,
                            "--count", "80", *args))
    h = history(tmp_path, pid)
    assert h.sessions == [1, 2]
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
