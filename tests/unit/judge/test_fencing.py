"""A generator fenced by a producer that is not the tool's is a finding (issue 48);
the fences the tool causes itself are not (verifier.judge.fencing)."""

from __future__ import annotations

import orjson

from verifier.judge.fencing import fencing_reasons, foreign_fences, run_fences

TID = "verifier-baseline-20261129T150102Z-s1.transactional-0"
FENCED = "ProducerFencedError: There is a newer producer with the same transactionalId"


def _session(ses=1, timeout=30000):
    return {"type": "session", "ses": ses, "t": 0,
            "config": {"transactional_id": TID, "transaction_timeout_ms": timeout}}


def _ident(ses=1, epoch=0, t=1):
    return {"type": "producer-id", "ses": ses, "producer_id": 7, "epoch": epoch, "t": t}


def _txn(txn, t, seqs, ses=1):
    lines = [{"type": "invoke", "f": "begin", "ses": ses, "txn": txn, "t": t},
             {"type": "ok", "f": "begin", "ses": ses, "txn": txn, "t": t}]
    lines += [{"type": "invoke", "f": "send", "ses": ses, "p": 0, "seq": s, "txn": txn,
               "t": t} for s in seqs]
    return lines


def _send_done(seq, t, error=None, ses=1):
    line = {"type": "fail" if error else "ok", "f": "send", "ses": ses, "p": 0, "seq": seq,
            "txn": 0, "t": t}
    return {**line, "error": error} if error else {**line, "offset": seq}


def test_a_fence_nobody_of_the_tool_caused_is_found_once_per_producer():
    lines = [_session(), *_txn(0, 10, [0, 1]), _send_done(0, 20), _ident(),
             {"type": "invoke", "f": "commit", "ses": 1, "txn": 0, "t": 30},
             {"type": "ok", "f": "commit", "ses": 1, "txn": 0, "t": 40},
             *_txn(1, 50, [2, 3]), _send_done(2, 60, FENCED), _send_done(3, 61, FENCED),
             {"type": "invoke", "f": "abort", "ses": 1, "txn": 1, "t": 62},
             {"type": "info", "f": "abort", "ses": 1, "txn": 1, "t": 63, "error": FENCED}]
    (fence,) = foreign_fences(lines)
    assert (fence.ses, fence.t, fence.op, fence.transactional_id) == (1, 60, "send", TID)
    reason = fence.reason("transactional-0")
    assert "not the tool's" in reason and TID in reason and "ProducerFencedError" in reason
    # the generator's next producer fenced again: a second finding
    again = [*lines, _ident(epoch=3, t=70), *_txn(2, 80, [4]),
             {"type": "invoke", "f": "commit", "ses": 1, "txn": 2, "t": 90},
             {"type": "info", "f": "commit", "ses": 1, "txn": 2, "t": 95, "error": FENCED}]
    assert [f.t for f in foreign_fences(again)] == [60, 95]


def test_the_orphan_of_a_producer_the_generator_replaced_is_its_own_fence():
    lines = [_session(), _ident(), *_txn(0, 10, [0, 1]),
             {"type": "invoke", "f": "commit", "ses": 1, "txn": 0, "t": 30},
             {"type": "info", "f": "commit", "ses": 1, "txn": 0, "t": 90,
              "error": "CallTimedOut: commit_transaction did not return within 60s"},
             _ident(epoch=1, t=91),  # the generator's new producer fenced the old one
             _send_done(1, 92, FENCED)]
    assert foreign_fences(lines) == []


def test_a_transaction_older_than_its_timeout_was_fenced_by_the_coordinator():
    lines = [_session(timeout=30000), _ident(), *_txn(0, 1000, [0]),
             {"type": "invoke", "f": "commit", "ses": 1, "txn": 0, "t": 1100},
             {"type": "info", "f": "commit", "ses": 1, "txn": 0, "t": 31_500, "error": FENCED}]
    assert foreign_fences(lines) == []
    young = [_session(timeout=60000), *lines[1:]]
    assert len(foreign_fences(young)) == 1


def test_each_clients_fencing_errors_count():
    base = [_session(), _ident(), *_txn(0, 10, [0])]
    for error in ("ProducerFencedException: there is a newer producer",  # Java
                  "KafkaError{code=_FENCED,val=-144,str=\"fenced\"}",      # librdkafka
                  "KafkaError{code=PRODUCER_FENCED,val=90}"):
        assert len(foreign_fences([*base, _send_done(0, 20, error)])) == 1, error
    assert foreign_fences([*base, _send_done(0, 20, "KafkaTimeoutError: expired")]) == []


EPOCH = "InvalidProducerEpochError: [Error 47] InvalidProducerEpochError: None"


def test_an_old_epoch_answer_to_the_epoch_it_holds_is_a_bump_it_did_not_cause():
    # kafka-python met a foreign initTransactions with a send in flight (measured): the
    # leader's INVALID_PRODUCER_EPOCH, then its own KIP-360 bump, never a fence
    lines = [_session(), _ident(), *_txn(5, 10, [18, 19]), _send_done(18, 20, EPOCH),
             _ident(epoch=1, t=20),
             _send_done(19, 20, "IllegalStateError: Cannot call send in state READY")]
    (fence,) = foreign_fences(lines)
    assert (fence.t, fence.op) == (20, "send") and "InvalidProducerEpoch" in fence.error


def test_a_refusal_in_the_bump_is_a_consequence_not_a_cause():
    # the same foreign fence, the refused send written first in the same millisecond
    # (completion order is the client's: seen on the integration tier, the column PASSed)
    for refused in ("IllegalStateError: Cannot call send in state BUMPING_PRODUCER_EPOCH",
                    "IllegalStateError: Cannot call send in state READY"):
        lines = [_session(), _ident(), *_txn(5, 10, [18, 19]),
                 _send_done(19, 20, refused), _send_done(18, 20, EPOCH)]
        (fence,) = foreign_fences(lines)
        assert "InvalidProducerEpoch" in fence.error, refused


def _log(t, message):
    return {"type": "client-event", "ses": 1, "error": message, "t": t}


BUMP = ("Bumping producer epoch for ProducerIdAndEpoch(producer_id=7, epoch=0) after "
        "recoverable error")
FAILED = ("Failed to produce messages to topic-partition TopicPartition(topic='t', "
          "partition=1) with base offset None: [Error 47] {}: None")


def test_an_old_epoch_answer_only_in_the_clients_log_is_found():
    # measured: after a foreign initTransactions kafka-python's main thread blocked; the
    # answer was only in its log, no completion came, the history ended there
    lines = [_session(), _ident(), *_txn(3, 10, [38, 39]), _log(20, BUMP),
             _log(20, FAILED.format("InvalidProducerEpochError"))]
    (fence,) = foreign_fences(lines)
    assert fence.t == 20 and "InvalidProducerEpoch" in fence.error
    assert ": InvalidProducerEpochError)" in fence.reason("transactional-0")
    # its own bump: a timeout came first, in the log or as a completion written later
    own = [_session(), _ident(), *_txn(3, 10, [38, 39]),
           _log(15, FAILED.format("KafkaTimeoutError")), _log(16, BUMP),
           _log(17, FAILED.format("InvalidProducerEpochError"))]
    assert foreign_fences(own) == []
    later = [_session(), _ident(), *_txn(3, 10, [38, 39]), _log(16, BUMP),
             _log(17, FAILED.format("InvalidProducerEpochError")),
             _send_done(38, 15, "KafkaTimeoutError: Batch expired")]
    assert foreign_fences(later) == []


def test_an_old_epoch_answer_after_its_own_bump_is_the_tools():
    own_cause = "KafkaTimeoutError: Batch expired"
    base = [_session(), _ident(), *_txn(0, 10, [0, 1])]
    # the cause of its own bump first, or in the same completion chunk (same time)
    for t_cause in (15, 20):
        lines = [*base, _send_done(0, t_cause, own_cause), _send_done(1, 20, EPOCH)]
        assert foreign_fences(lines) == [], t_cause
    # a send made before the epoch the producer holds now
    lines = [*base, _ident(epoch=1, t=12), _send_done(1, 20, EPOCH)]
    assert foreign_fences(lines) == []


def test_a_run_folders_histories_are_read_and_a_clean_one_is_not_parsed(tmp_path):
    def write(pid, lines):
        (tmp_path / f"{pid}.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n"
                                                         for x in lines) + b'{"torn')

    write("transactional-0", [_session(), _ident(), *_txn(0, 10, [0]),
                              _send_done(0, 20, FENCED)])
    write("transactional-1", [_session(), _ident(), *_txn(0, 10, [0]),
                              _send_done(0, 20, EPOCH)])
    write("idempotent-0", [_session(), _ident(), *_txn(0, 10, [0]), _send_done(0, 20)])
    found = run_fences(tmp_path, ["transactional-0", "transactional-1", "idempotent-0",
                                  "missing-0"])
    assert list(found) == ["transactional-0", "transactional-1"]
    reasons = fencing_reasons(tmp_path, {"transactional-0": "transactional",
                                         "idempotent-0": "idempotent"})
    assert list(reasons) == ["transactional"] and len(reasons["transactional"]) == 1


def test_a_fenced_column_cannot_pass_and_a_fail_stays():
    from verifier.judge.fencing import mark_foreign_fences

    doc = {"columns": [
        {"name": "transactional@read_committed", "mode": "transactional", "verdict": "PASS",
         "reasons": []},
        {"name": "user:s.properties@read_committed", "mode": "user:s.properties",
         "verdict": "FAIL", "reasons": []},
        {"name": "idempotent", "mode": "idempotent", "verdict": "PASS", "reasons": []}]}
    mark_foreign_fences(doc, {"transactional": ["fenced A"], "user:s.properties": ["B"]})
    assert [c["verdict"] for c in doc["columns"]] == ["UNKNOWN", "FAIL", "PASS"]
    assert doc["columns"][0]["reasons"] == ["fenced A"] and doc["foreign_fences"] == [
        "fenced A", "B"]
    clean = {"columns": [{"mode": "idempotent", "verdict": "PASS", "reasons": []}]}
    mark_foreign_fences(clean, {})
    assert "foreign_fences" not in clean and clean["columns"][0]["verdict"] == "PASS"

