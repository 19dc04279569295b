"""The ``copy-committed`` trigger (verifier.harness.faults.probes): KAFKA-15449's copier
is killed inside the transaction after the commit that followed the late copy's answer,
so its restart resumes from the group's committed offsets before it copies the aborted
input again. The copier itself no longer reads its committed offsets back after each
commit (no real transactional consumer does)."""

from __future__ import annotations

import inspect

from producers import copier
from verifier.harness.faults import probes as P
from verifier.harness.faults import triggers as T
from verifier.orchestration.scenario import load_scenario

HOLDS = [
    {"seq": 1, "event": "hold", "t": 1000, "hold": 1, "client_view": "copy"},
    {"seq": 2, "event": "hold", "t": 1500, "hold": 2, "client_view": "delay", "gated": True},
    {"seq": 3, "event": "release", "t": 4000, "hold": 1},
    {"seq": 4, "event": "answer", "t": 3000, "hold": 2, "gated": True},  # a gated request
    {"seq": 5, "event": "answer", "t": 4100, "hold": 1},
]


def test_the_copys_answer_is_the_first_answer_to_a_held_copy():
    assert P.copy_answered_at(HOLDS) == 4100
    assert P.copy_answered_at(HOLDS[:4]) is None  # released, not answered yet
    assert P.copy_answered_at([]) is None
    # the proxy keeps an earlier run's events: only those since the wait began count
    assert P.copy_answered_at(HOLDS, since_ms=1200) is None
    later = [{**e, "t": e["t"] + 10_000, "hold": e["hold"] + 10} for e in HOLDS]
    assert P.copy_answered_at([*HOLDS, *later], since_ms=5000) == 14100


def line(kind, f, txn, t, **kw):
    return {"type": kind, "f": f, "ses": 1, "txn": txn, "t": t, **kw}


def txn(n, t, end="commit", sends=1):
    out = [line("invoke", "begin", n, t), line("ok", "begin", n, t + 1)]
    out += [line("invoke", "send", n, t + 2, p=0, seq=n * 10 + i) for i in range(sends)]
    if end:
        out += [line("invoke", end, n, t + 5), line("ok", end, n, t + 9)]
    return out


def test_the_kill_waits_for_a_transaction_after_a_commit_since_the_answer():
    before = [*txn(1, 3000), *txn(2, 3990, end="abort")]  # all ended before 4100
    # B (3) was begun before the answer and committed after it; C (4) is open with a send
    history = [*before, *txn(3, 4095), *txn(4, 4200, end=None)]
    assert P.after_commit_since(history, 4100) == {"txn": 4, "sends": 1, "acked": 0,
                                                   "committed_txn": 3}
    # nothing committed since the answer yet: B still open, or C begun without a send
    assert P.after_commit_since([*before, *txn(3, 4095, end=None)], 4100) is None
    assert P.after_commit_since([*before, *txn(3, 4095), *txn(4, 4200, sends=0, end=None)],
                                4100) is None
    # between B and C: no transaction open
    assert P.after_commit_since([*before, *txn(3, 4095)], 4100) is None
    # a transaction that committed before the answer does not count
    assert P.after_commit_since([*txn(1, 3000), *txn(2, 3100, end=None)], 4100) is None


def test_kafka_15449_restarts_its_copier_after_the_late_commit():
    faults = load_scenario("kafka-15449").faults
    kills = [f for f in faults if f["kind"] == "producer-kill"]
    assert [k["target"] for k in kills] == [{"process": "producer:copier"}]
    assert kills[0]["params"]["trigger"] == "copy-committed"
    assert T.trigger_of("producer-kill", kills[0]["params"], 2).poll_s <= 0.02


def test_the_copier_does_not_read_its_committed_offsets_back_after_a_commit():
    assert not hasattr(copier, "resync")
    assert "committed(" not in inspect.getsource(copier.copy_loop)


def test_the_copier_fetches_about_a_transaction_of_each_partition():
    """A restarted copier behind its input took one partition's whole backlog (1 MiB)
    and never came back to the partition whose offsets jumped: nothing seen lost."""
    assert 5 * 100 <= copier.fetch_bytes(5, 100) <= 4096
    assert copier.fetch_bytes(1, 10) == 1024
