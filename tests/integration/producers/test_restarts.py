"""SIGKILL a generator and start it again with the same --pid and --run-dir."""

from __future__ import annotations

import pytest

from tests.integration.producers.helpers import copies, generator, history, read_log, run_to_end
from verifier.harness.topics import admin, create_topics, partition_states
from verifier.rundata.history import history_path, read_history
from verifier.rundata.waiting import wait_until

pytestmark = pytest.mark.integration


def _open_txn(run_dir, pid):
    """``(done, (txn, ended, acked))``: the newest transaction, meant to commit, has some
    of its sends acknowledged, and neither commit nor abort has been invoked."""
    h = read_history(history_path(run_dir, pid))
    begun = [e for e in h.events if e.get("f") == "begin" and e["type"] == "invoke"]
    if not begun or begun[-1]["abort"]:
        return False, "no transaction meant to commit yet"
    txn = begun[-1]["txn"]
    ended = any(e.get("f") in ("commit", "abort") and e["txn"] == txn for e in h.events)
    acked = sum(1 for e in h.events
                if e.get("f") == "send" and e["type"] == "ok" and e["txn"] == txn)
    return (not ended and acked >= 3), (txn, ended, acked)


def _epoch(bootstrap, tid):
    with admin(bootstrap) as a:
        d = a.describe_transactions([tid])[tid]
    return d.producer_id, d.producer_epoch, str(d.state)


def test_transactional_kill_mid_transaction_and_restart(cluster, bootstrap, topic_name,
                                                         tmp_path):
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid, tid = "transactional-0", "it.transactional-0"
    # abort decisions are seeded per (seed, pid, session): with seed 4 both new
    # transactions of session 2 are meant to abort, so the test always sees some
    args = ["--txn-size", "40", "--rate", "200", "--abort-fraction", "0.25", "--seed", "4"]
    first = generator("txn-1", tmp_path, bootstrap, topic_name, "transactional", pid,
                      "--duration", "60", *args)
    first.start()
    try:
        txn, _, _ = wait_until(lambda: _open_txn(tmp_path, pid), timeout=60, interval=0.02,
                         max_interval=0.05, what="a transaction with acknowledged sends",
                         expected="begin ok, >= 3 sends ok, no commit/abort yet")
        first.kill()
    finally:
        if first.alive:
            first.kill()
    producer_id, epoch_before, _ = _epoch(bootstrap, tid)

    run_to_end(generator("txn-2", tmp_path, bootstrap, topic_name, "transactional", pid,
                         "--count", "80", *args))
    producer_id_after, epoch_after, state = _epoch(bootstrap, tid)
    assert (producer_id_after, epoch_after) > (producer_id, epoch_before), state

    h = history(tmp_path, pid)
    assert h.sessions == [1, 2]
    # the history's producer-id lines (the fault report's epoch evidence) name what the
    # broker's transaction coordinator says
    idents = [(e["ses"], e["producer_id"], e["epoch"]) for e in h.events
              if e.get("type") == "producer-id"]
    assert idents[0] == (1, producer_id, epoch_before), idents
    assert idents[-1] == (2, producer_id_after, epoch_after), idents
    begins = {(e["ses"], e["txn"]): e for e in h.events if e.get("f") == "begin"
              and e["type"] == "invoke"}
    committed = {e["txn"] for e in h.events if e.get("f") == "commit" and e["type"] == "ok"}
    aborted_on_purpose = {t for (_, t), e in begins.items() if e["abort"]} - committed
    assert txn in committed and (2, txn) in begins, "the killed transaction was redone"
    assert begins[(2, txn)]["recs"] == begins[(1, txn)]["recs"], "with the same ids"
    assert aborted_on_purpose, "seeded abort fraction: some transactions abort"
    expected = {(pid, p, s) for (_, t), e in begins.items() if t in committed
                for p, s in e["recs"]}

    rc = copies(read_log(bootstrap, topic_name, "read_committed"))
    assert set(rc) == expected
    dupes = {i: [(c[0], c[1]) for c in cs] for i, cs in rc.items() if len(cs) > 1}
    assert not dupes, f"committed records seen more than once: {dupes}"
    assert not [i for i, cs in rc.items() for c in cs if c[2].abort or (c[2].ses, c[2].txn)
                == (1, txn)], "read_committed shows records of aborted transactions"

    ru = read_log(bootstrap, topic_name, "read_uncommitted")
    killed_copies = [rid for _, _, rid in ru if (rid.ses, rid.txn) == (1, txn)]
    acked_before_kill = [e for e in h.events if e.get("f") == "send" and e["type"] == "ok"
                         and (e["ses"], e["txn"]) == (1, txn)]
    assert len(killed_copies) >= len(acked_before_kill) >= 3
    assert any(rid.abort for _, _, rid in ru), "read_uncommitted shows aborted copies"


def test_idempotent_kill_resends_unacked_records_as_cross_session_duplicates(
        cluster, bootstrap, topic_name, tmp_path):
    """Deterministic: a paused follower holds every acks=all response back while the
    leader has already appended the records; the kill then catches appended, un-acked
    sends, which the restart re-sends with the same ids."""
    create_topics(bootstrap, {topic_name: 1}, replication_factor=3)
    state = partition_states(bootstrap, [topic_name])[(topic_name, 0)]
    follower = next(n for n in state["replicas"] if n != state["leader"])
    pid = "idempotent-0"
    first = generator("idem-1", tmp_path, bootstrap, topic_name, "idempotent", pid,
                      "--duration", "60", "--rate", "1000")
    first.start()

    def sends():
        h = read_history(history_path(tmp_path, pid))
        ok = {(e["p"], e["seq"]) for e in h.events if e.get("f") == "send" and e["type"] == "ok"}
        inv = [(e["p"], e["seq"]) for e in h.events if e.get("f") == "send"
               and e["type"] == "invoke"]
        return ok, [i for i in inv if i not in ok]

    paused = False
    try:
        wait_until(lambda: (len(sends()[0]) >= 100, len(sends()[0])), timeout=60,
                   what="acknowledged sends", expected=">= 100 ok", interval=0.05)
        cluster.pause_node(follower)
        paused = True
        # replica.lag.time.max.ms is 5 s on the test cluster: kill well before the ISR
        # shrinks and the held-back acknowledgements are released
        unacked = wait_until(lambda: (len(sends()[1]) >= 200, sends()[1]), timeout=4,
                             interval=0.05, max_interval=0.1, what="un-acknowledged sends",
                             expected=">= 200 invokes without ok", describe=len)
        first.kill()
    finally:
        if first.alive:
            first.kill()
        if paused:
            cluster.resume_node(follower)
    acked, unacked_all = sends()  # what session 1's history shows, before the restart

    run_to_end(generator("idem-2", tmp_path, bootstrap, topic_name, "idempotent", pid,
                         "--count", "50"))
    h = history(tmp_path, pid)
    resent = [(e["p"], e["seq"]) for e in h.events if e.get("f") == "send"
              and e["type"] == "invoke" and e["ses"] == 2]
    assert set(unacked) <= set(resent[:len(unacked_all)]), "un-acked records re-sent first"
    assert set(resent[:len(unacked_all)]) == set(unacked_all)
    assert not set(resent) & acked, "acknowledged records are never re-sent"

    by_id = copies(read_log(bootstrap, topic_name, "read_uncommitted"))
    dupes = {i: sorted(c[2].ses for c in cs) for i, cs in by_id.items() if len(cs) > 1}
    assert dupes, "records appended before the kill appear again after the re-send"
    assert all(s == [1, 2] for s in dupes.values()), f"only cross-session duplicates: {dupes}"
    assert {(p, s) for _, p, s in dupes} <= set(unacked_all)
    assert {(pid, p, s) for p, s in acked} <= set(by_id), "no acknowledged record lost"


END_TXN = 26  # Kafka API key of EndTxn (commit/abort)


def test_a_commit_whose_answer_is_lost_is_read_back_not_redone(cluster, bootstrap, proxies,
                                                               topic_name, tmp_path):
    """The proxy swallows every EndTxn response: the coordinator commits, but each
    ``commit_transaction`` runs into max.block.ms and ends ``info``. The generator must
    find out from the log that those commits happened (after the new producer's
    init_transactions finished them) and not redo them: a blind redo is a duplicate at
    read_committed that the tool itself would have made."""
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = "transactional-0"
    rule = proxies.add_rule(kind="drop_response", api_keys=[END_TXN], every=1)
    try:
        run_to_end(generator("txn-lost-commit", tmp_path, bootstrap, topic_name,
                             "transactional", pid, "--count", "20", "--txn-size", "10",
                             "--set", "max.block.ms=6000", "--set", "request.timeout.ms=2000"),
                   timeout=180)
    finally:
        removed = proxies.remove_rule(rule["id"])
    assert removed["hits"] >= 2, removed

    h = history(tmp_path, pid)
    commits = [e for e in h.events if e.get("f") == "commit" and e["type"] != "invoke"]
    assert [e["type"] for e in commits] == ["info", "info"], commits
    begins = [e["txn"] for e in h.events if e.get("f") == "begin" and e["type"] == "invoke"]
    assert begins == [0, 1], "no transaction was redone"
    log = (tmp_path / "logs" / "txn-lost-commit.log").read_text()
    assert log.count("its unanswered commit happened; not redoing it") == 2, log[-3000:]

    rc = copies(read_log(bootstrap, topic_name, "read_committed"))
    assert len(rc) == 20 and all(len(cs) == 1 for cs in rc.values()), rc
