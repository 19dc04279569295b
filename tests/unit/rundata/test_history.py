"""History round trip, torn lines, unknown versions; what a restart learns from it."""

from __future__ import annotations

import orjson
import pytest

from producers.resume import resume_state
from verifier.rundata.history import HistoryError, HistoryWriter, read_history

HEADER = {"run": "r1", "pid": "idempotent-0", "mode": "idempotent", "topic": "t",
          "partitions": [0, 1]}


def _write(path, events):
    with HistoryWriter(path, HEADER) as w:
        for e in events:
            w.write(dict(e))


SESSION_1 = [
    {"type": "session", "ses": 1, "config": {}, "os_pid": 1},
    {"type": "invoke", "f": "send", "ses": 1, "p": 0, "seq": 0, "txn": None},
    {"type": "invoke", "f": "send", "ses": 1, "p": 1, "seq": 0, "txn": None},
    {"type": "ok", "f": "send", "ses": 1, "p": 0, "seq": 0, "txn": None, "offset": 7},
    {"type": "invoke", "f": "send", "ses": 1, "p": 0, "seq": 1, "txn": None},
    {"type": "info", "f": "send", "ses": 1, "p": 0, "seq": 1, "txn": None, "error": "x"},
]


def test_round_trip(tmp_path):
    path = tmp_path / "h.jsonl"
    _write(path, SESSION_1)
    h = read_history(path)
    assert h.header["format"] == "producer-history" and h.header["version"] == 1
    assert h.header["pid"] == "idempotent-0" and not h.torn_tail
    assert [e["type"] for e in h.events] == [e["type"] for e in SESSION_1]
    assert all("t" in e for e in h.events)
    assert h.events[3]["offset"] == 7


def test_torn_last_line_is_ignored_and_cut_before_appending(tmp_path):
    path = tmp_path / "h.jsonl"
    _write(path, SESSION_1)
    with open(path, "ab") as f:
        f.write(b'{"type":"invoke","f":"send","ses":1,"p":1,"se')
    h = read_history(path)
    assert h.torn_tail and len(h.events) == len(SESSION_1)
    _write(path, [{"type": "session", "ses": 2, "config": {}, "os_pid": 2}])
    h2 = read_history(path)
    assert not h2.torn_tail and h2.sessions == [1, 2]


def test_unterminated_last_line_counts_as_torn(tmp_path):
    path = tmp_path / "h.jsonl"
    _write(path, SESSION_1)
    with open(path, "ab") as f:
        f.write(orjson.dumps({"type": "session", "ses": 9}))  # no newline
    assert read_history(path).torn_tail


def test_torn_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "h.jsonl"
    _write(path, SESSION_1)
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2][:10]
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(HistoryError, match=r"h.jsonl: line 3 .*only the last line"):
        read_history(path)


@pytest.mark.parametrize("header, message", [
    ({"type": "header", "format": "producer-history", "version": 2},
     "unknown producer-history version 2"),
    ({"type": "header", "format": "nemesis-history", "version": 1}, "not a producer history"),
    ({"type": "invoke"}, "not a producer history"),
])
def test_unknown_format_or_version_names_the_file(tmp_path, header, message):
    path = tmp_path / "old.jsonl"
    path.write_bytes(orjson.dumps(header) + b"\n")
    with pytest.raises(HistoryError, match=message) as err:
        read_history(path)
    assert str(path) in str(err.value)


def test_appending_to_another_producers_history_is_refused(tmp_path):
    path = tmp_path / "h.jsonl"
    _write(path, SESSION_1)
    with pytest.raises(HistoryError, match="belongs to mode='idempotent'"):
        HistoryWriter(path, {**HEADER, "mode": "at-least-once"})


def test_resume_plain(tmp_path):
    path = tmp_path / "h.jsonl"
    _write(path, SESSION_1)
    st = resume_state(read_history(path))
    assert st.session == 2
    assert st.unacked == [(1, 0), (0, 1)]  # no ok: re-sent with the same ids
    assert st.next_seq == {0: 2, 1: 1}
    assert resume_state(None).session == 1


def test_resume_transactional(tmp_path):
    path = tmp_path / "h.jsonl"
    events = [{"type": "session", "ses": 1, "config": {}, "os_pid": 1}]
    for txn, abort, recs, committed in [(0, False, [[0, 0], [1, 0]], True),
                                        (1, True, [[0, 1], [1, 1]], False),
                                        (2, False, [[0, 2], [1, 2]], False)]:
        events.append({"type": "invoke", "f": "begin", "ses": 1, "txn": txn, "abort": abort,
                       "recs": recs})
        if committed:
            events.append({"type": "ok", "f": "commit", "ses": 1, "txn": txn})
    _write(path, events)
    st = resume_state(read_history(path))
    assert [(t.txn, t.recs) for t in st.uncommitted] == [(2, ((0, 2), (1, 2)))]
    assert st.next_txn == 3 and st.next_seq == {0: 3, 1: 3}
    assert st.uncommitted[0].probe == ()  # its commit was never invoked: redo blindly


def test_resume_probes_a_commit_that_was_never_answered(tmp_path):
    """A commit invoked by a session that died (or that ended info) may have happened:
    the restart gets offsets to read back, from the session that invoked it; a commit
    that failed definitely did not happen and needs no probe."""
    path = tmp_path / "h.jsonl"

    def txn(ses, n, offsets, commit):
        out = [{"type": "invoke", "f": "begin", "ses": ses, "txn": n, "abort": False,
                "recs": [[0, n], [1, n], [0, n + 10]]}]
        for (p, seq), off in zip([(0, n), (1, n), (0, n + 10)], offsets, strict=True):
            out.append({"type": "ok", "f": "send", "ses": ses, "p": p, "seq": seq,
                        "txn": n, "offset": off})
        out.append({"type": "invoke", "f": "commit", "ses": ses, "txn": n})
        if commit:
            out.append({"type": commit, "f": "commit", "ses": ses, "txn": n, "error": "e"})
        return out

    events = [{"type": "session", "ses": 1, "config": {}, "os_pid": 1},
              *txn(1, 0, [5, 9, 6], "fail"),  # definite: no probe
              *txn(1, 1, [7, 10, 8], "info"),  # timed out: probe
              *txn(1, 2, [11, 12, None], None)[:-1],  # died before commit: no probe
              {"type": "session", "ses": 2, "config": {}, "os_pid": 2},
              *txn(2, 2, [20, 21, 22], None)]  # redone, then died during the commit
    _write(path, events)
    st = resume_state(read_history(path))
    assert [(t.txn, t.probe) for t in st.uncommitted] == [
        (0, ()), (1, ((0, 7), (1, 10))), (2, ((0, 20), (1, 21)))]


@pytest.mark.parametrize("txn", [None, 0, 98765])
def test_invoke_send_lines_are_the_dicts_dumped(txn):
    import orjson

    from verifier.rundata.history import invoke_send_lines

    idents = [(0, 0), (2, 17), (10, 123456789)]
    want = [orjson.dumps({"type": "invoke", "f": "send", "ses": 4, "p": p, "seq": seq,
                          "txn": txn, "t": 1795314893744}) + b"\n" for p, seq in idents]
    assert invoke_send_lines(4, idents, txn, 1795314893744) == want


@pytest.mark.parametrize("txn", [None, 7])
def test_ok_send_line_is_the_dict_dumped(txn):
    import orjson

    from verifier.rundata.history import ok_send_line

    want = orjson.dumps({"type": "ok", "f": "send", "ses": 2, "p": 1, "seq": 44, "txn": txn,
                         "offset": 1234567, "t": 1795314893744}) + b"\n"
    assert ok_send_line(2, 1, 44, txn, 1234567, 1795314893744) == want


@pytest.mark.parametrize("txn", [None, 7])
def test_no_ack_send_line_is_the_dict_dumped(txn):
    import orjson

    from verifier.rundata.history import NO_ACK, no_ack_send_line

    want = orjson.dumps({"type": "info", "f": "send", "ses": 3, "p": 2, "seq": 45, "txn": txn,
                         "error": NO_ACK, "t": 1795314893745}) + b"\n"
    assert no_ack_send_line(3, 2, 45, txn, 1795314893745) == want
