"""The attempt ledger (verifier.judge.checks.ledger): the histories fed in chunks, folded
into its base now and then, give at every moment the counts and attempts the batch pass
computes from the whole histories at once; and the open attempts it parks are taken
back exactly when they can matter."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from verifier.judge.checks import history as H
from verifier.judge.checks.ledger import (
    AttemptLedger,
    OpenAttempts,
    committed_counts,
    empty_history,
)  # fmt: skip
from verifier.judge.definitions.stream import LiveChecks
from verifier.rundata.formats import read_json
from verifier.rundata.history import read_histories

RUNS = Path(__file__).parents[2] / "data" / "runs"


def _whole(name: str) -> tuple[pa.Table, dict[str, str]]:
    cfg = read_json(RUNS / name / "config.json", "run-config")
    hist, _ = read_histories(RUNS / name / "histories", cfg["run"], list(cfg["producers"]))
    return hist, {pid: p["topic"] for pid, p in cfg["producers"].items()}


def _batch_counts(attempts: pa.Table, status: pa.Table, topics) -> dict:
    """The batch pass's classes: one row per identity (history.sends), committed records
    (history.txn_sizes), per producer."""
    out: dict[str, dict[str, int]] = {}
    for s in H.sends(attempts, status, topics).to_pylist():
        c = out.setdefault(s["pid"], dict.fromkeys(
            ("sent", "acknowledged", "indeterminate", "failed"), 0))
        c["sent"] += 1
        c["acknowledged" if s["ok"] else "indeterminate" if s["info"] else "failed"] += 1
    committed: dict[str, int] = {}
    for t in H.txn_sizes(attempts, status).to_pylist():
        committed[t["pid"]] = committed.get(t["pid"], 0) + t["size"]
    return {"ids": out, "committed": committed}


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple((0,) if v is None else (1, v) for v in r.values())
                  for r in t.select([*H.ATTEMPT_KEYS, "ok", "info", "failed", "t", "offset"])
                  .to_pylist())


@pytest.mark.parametrize("name", ["combined", "producer-kill"])
@pytest.mark.parametrize("fold_rows", [1, 700, 10**9])
def test_fed_in_chunks_the_ledger_counts_as_the_batch_pass(name, fold_rows):
    """At every chunk (lines cut at random, identities and transactions across chunks
    and folds, re-sends in a later session): the ledger's counts, and the attempts it
    picks for some identities and transactions, are the batch pass's on the lines so
    far. A fold that lost or counted twice an identity it moved shows here."""
    whole, topics = _whole(name)
    rnd = random.Random(fold_rows)
    ledger, pos, checked = AttemptLedger(fold_rows=fold_rows), 0, 0
    while pos < whole.num_rows:
        step = rnd.randint(1, 700)
        ledger.add(whole.slice(pos, step))
        pos += step
        if rnd.random() < 0.6 or pos >= whole.num_rows:
            so_far = whole.slice(0, pos)
            attempts = H.attempts(so_far)
            status = H.txn_status(H.txn_flags(so_far), set())
            view = ledger.view()
            want = _batch_counts(attempts, status, topics)
            assert view.counts == want["ids"]
            assert committed_counts(view.records, status) == want["committed"]
            ids = attempts.select(H.IDENTITY).take(
                sorted(rnd.sample(range(attempts.num_rows), min(50, attempts.num_rows))))
            assert _rows(view.attempts(ids, H.IDENTITY)) == \
                _rows(attempts.join(ids, H.IDENTITY, join_type="inner"))
            txns = H.txn_flags(so_far).select(H.TXN_KEYS).slice(0, 7)
            assert _rows(view.attempts(txns, H.TXN_KEYS)) == \
                _rows(attempts.join(txns, H.TXN_KEYS, join_type="inner"))
            checked += 1
    assert checked > 1
    if fold_rows < whole.num_rows:
        assert ledger.base is not None  # folds happened
    if name == "producer-kill":  # re-sends of a restarted producer: identities span folds
        per = H.attempts(whole).group_by(H.IDENTITY).aggregate([([], "count_all")])
        assert pc.max(per["count_all"]).as_py() > 1


def test_an_empty_ledger():
    view = AttemptLedger().view()
    assert view.counts == {}
    assert view.attempts(H.attempts(empty_history()).select(H.IDENTITY),
                         H.IDENTITY).num_rows == 0


def _state(held: dict[tuple, list[int]]) -> LiveChecks:
    """A level's state holding, at topic "t" partition 0, the sequences of each
    (pid, ses)."""
    from verifier.judge.definitions.stream import PartitionState, Ranges

    live = LiveChecks("r", "read_committed", {"a": "t"})
    st = live.parts.setdefault(("t", 0), PartitionState())
    for (pid, ses), seqs in held.items():
        r = st.seqs.setdefault(pid, {}).setdefault(ses, Ranges())
        for s in seqs:
            r.add(s)
    return live


def _lines(*rows) -> pa.Table:
    cols = ["type", "f", "ses", "p", "seq", "txn", "abort", "offset", "t", "pid"]
    t = empty_history()
    data = {c: [dict(zip(cols, r, strict=False)).get(c) for r in rows] for c in cols}
    return pa.table({c: pa.array(data[c], t.schema.field(c).type) for c in cols})


def test_parked_attempts_come_back_when_they_can_matter():
    """An attempt with no ok line, outside transactions, is parked until a line of it
    comes; an attempt of a failed transaction is parked and taken back at the end only
    if the transaction ended committed, unless the final states hold it."""
    o = OpenAttempts({"a": "t"})
    o.add(H.attempt_parts(_lines(("invoke", "send", 1, 0, 1, None, None, None, 1, "a"),
                                 ("invoke", "send", 1, 0, 2, 7, None, None, 1, "a"),
                                 ("invoke", "send", 1, 0, 3, 8, None, None, 1, "a"))))
    failed = _lines(("invoke", "commit", 1, None, None, 7, None, None, 2, "a"),
                    ("fail", "commit", 1, None, None, 7, None, None, 3, "a"))
    none = {"rc": _state({}), "ru": _state({})}
    o.settle(none, H.txn_flags(failed))
    assert list(o.open) == [("a", 1, 8, 0, 3)] and len(o.parked) == 2
    o.add(H.attempt_parts(_lines(("ok", "send", 1, 0, 1, None, None, 5, 4, "a"))))
    assert ("a", 1, None, 0, 1) in o.open  # its ok line came: it may be lost now
    flags = H.merge_flags([H.txn_flags(failed), H.txn_flags(
        _lines(("ok", "commit", 1, None, None, 7, None, None, 9, "a")))])
    status = H.txn_status(flags, set())
    assert set(o.candidates(none, status)) == {("a", 1, None, 0, 1), ("a", 1, 7, 0, 2),
                                                ("a", 1, 8, 0, 3)}
    both = {"rc": _state({("a", 1): [2]}), "ru": _state({("a", 1): [2]})}
    assert ("a", 1, 7, 0, 2) not in o.candidates(both, status)
    aborted = H.txn_status(H.txn_flags(failed), set())
    assert ("a", 1, 7, 0, 2) not in o.candidates(none, aborted)


def test_an_identity_across_sessions_and_folds():
    """One line at a time, each folded: a send that ended info, re-sent after a restart
    that failed, is indeterminate (not failed); a send acknowledged once stays so
    whatever its re-send says; a transaction's records across folds all count."""
    lines = _lines(
        ("invoke", "send", 1, 0, 0, None, None, None, 1, "a"),
        ("info", "send", 1, 0, 0, None, None, None, 2, "a"),
        ("invoke", "send", 1, 0, 1, None, None, None, 3, "a"),
        ("ok", "send", 1, 0, 1, None, None, 0, 4, "a"),
        ("invoke", "begin", 1, None, None, 5, False, None, 5, "a"),
        ("invoke", "send", 1, 0, 2, 5, None, None, 6, "a"),
        ("invoke", "send", 1, 1, 0, 5, None, None, 7, "a"),
        ("ok", "send", 1, 0, 2, 5, None, 1, 8, "a"),
        ("invoke", "send", 2, 0, 0, None, None, None, 9, "a"),
        ("fail", "send", 2, 0, 0, None, None, None, 10, "a"),
        ("invoke", "send", 2, 0, 1, None, None, None, 11, "a"),
        ("fail", "send", 2, 0, 1, None, None, None, 12, "a"),
        ("invoke", "commit", 1, None, None, 5, None, None, 13, "a"),
        ("ok", "commit", 1, None, None, 5, None, None, 14, "a"),
    )
    ledger = AttemptLedger(fold_rows=1)
    for i in range(lines.num_rows):
        ledger.add(lines.slice(i, 1))
    status = H.txn_status(H.txn_flags(lines), set())
    want = _batch_counts(H.attempts(lines), status, {"a": "t"})
    view = ledger.view()
    assert view.counts == want["ids"] == {"a": {"sent": 4, "acknowledged": 2,
                                                "indeterminate": 2, "failed": 0}}
    assert committed_counts(view.records, status) == want["committed"] == {"a": 2}


def test_the_end_does_not_fold():
    """The last chunk, added right before the end, stays among the recent parts even
    past the fold size: a fold groups the whole base, which the end must not do."""
    whole, topics = _whole("combined")
    ledger = AttemptLedger(fold_rows=100)
    ledger.add(whole.slice(0, 500))
    base = ledger.base
    ledger.add(whole.slice(500, 500), fold=False)
    assert ledger.base is base and ledger.recent
    assert ledger.view().counts == _batch_counts(
        H.attempts(whole.slice(0, 1000)),
        H.txn_status(H.txn_flags(whole.slice(0, 1000)), set()), topics)["ids"]


def _redone(last_commit: str) -> pa.Table:
    """Transaction 25 as a broker kill left it in the container tier's run (2026-11-29):
    its sends timed out, its abort failed (error state), the generator redid it under the
    same number, and the redo's commit ended ``last_commit``."""
    return _lines(("invoke", "begin", 1, None, None, 25, False, None, 10, "a"),
                  ("invoke", "send", 1, 0, 1504, 25, None, None, 11, "a"),
                  ("info", "send", 1, 0, 1504, 25, None, None, 20, "a"),
                  ("invoke", "abort", 1, None, None, 25, None, None, 21, "a"),
                  ("info", "abort", 1, None, None, 25, None, None, 22, "a"),
                  ("invoke", "begin", 1, None, None, 25, False, None, 30, "a"),
                  ("invoke", "send", 1, 0, 1504, 25, None, None, 31, "a"),
                  ("ok", "send", 1, 0, 1504, 25, None, 1529, 32, "a"),
                  ("invoke", "commit", 1, None, None, 25, None, None, 33, "a"),
                  (last_commit, "commit", 1, None, None, 25, None, None, 40, "a"))


def test_a_redone_transaction_is_judged_by_its_last_attempt():
    """The first attempt's abort does not decide the redo: a redo whose commit ended
    unknown and whose records a read_committed reader saw committed (judging it aborted
    made those records 38 aborted reads, a false FAIL); a redo whose commit failed, or
    a transaction aborted after its last begin, stays aborted. Chunked as the live path
    reads it, the same."""
    seen = {("a", 1, 25)}
    whole = _redone("info")
    assert H.txn_status(H.txn_flags(whole), seen)["status"].to_pylist() == ["committed"]
    parts = [H.txn_flags(whole.slice(i, 1)) for i in range(whole.num_rows)]
    assert H.txn_status(H.merge_flags(parts), seen)["status"].to_pylist() == ["committed"]
    assert H.txn_status(H.txn_flags(_redone("fail")), seen)["status"].to_pylist() == [
        "aborted"]
    first = whole.slice(0, 5)  # no redo: the abort is the last word
    assert H.txn_status(H.txn_flags(first), seen)["status"].to_pylist() == ["aborted"]
