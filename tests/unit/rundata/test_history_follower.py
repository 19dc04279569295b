"""Following a history while its producer writes it: complete lines only, a line cut in
two across polls, a generator that restarts after a torn line, and the reductions merged
chunk by chunk equal to the batch pass's over the whole file."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from verifier.judge.checks import history as H
from verifier.rundata.formats import RunFormatError
from verifier.rundata.history import HistoryFollower, HistoryWriter, read_histories

RUN = Path(__file__).parents[2] / "data" / "runs" / "combined"
HEAD = {"run": "r1", "pid": "p-0", "mode": "idempotent", "topic": "t"}


def _send(ses, p, seq, typ="invoke", **kw) -> dict:
    return {"type": typ, "f": "send", "ses": ses, "p": p, "seq": seq, "txn": None, "t": 1, **kw}


def _rows(t: pa.Table | None) -> list[tuple]:
    return [] if t is None else [(r["type"], r["ses"], r["seq"]) for r in t.to_pylist()]


def test_a_line_cut_in_two_waits_for_its_end(tmp_path):
    path = tmp_path / "p-0.jsonl"
    with HistoryWriter(path, HEAD) as w:
        w.write({"type": "session", "ses": 1})
        w.write(_send(1, 0, 0))
    f = HistoryFollower(path, "r1", "p-0")
    assert _rows(f.poll()) == [("invoke", 1, 0)] and f.started
    line = b'{"type":"ok","f":"send","ses":1,"p":0,"seq":0,"txn":null,"offset":7,"t":2}\n'
    with open(path, "ab") as out:
        out.write(line[:20])
    assert f.poll() is None  # half a line: nothing yet
    with open(path, "ab") as out:
        out.write(line[20:])
    assert _rows(f.poll()) == [("ok", 1, 0)]
    assert f.poll() is None


def test_a_restarted_generator_cuts_its_torn_line_and_the_follower_goes_on(tmp_path):
    path = tmp_path / "p-0.jsonl"
    with HistoryWriter(path, HEAD) as w:
        w.write({"type": "session", "ses": 1})
        w.write(_send(1, 0, 0))
    with open(path, "ab") as out:  # SIGKILL mid-write
        out.write(b'{"type":"ok","f":"send","ses":1,"p"')
    f = HistoryFollower(path, "r1", "p-0")
    assert _rows(f.poll()) == [("invoke", 1, 0)]
    with HistoryWriter(path, HEAD) as w:  # the restart: the torn line goes, session 2 on
        w.write({"type": "session", "ses": 2})
        w.write(_send(2, 0, 0))
        w.write(_send(2, 0, 0, "ok", offset=3))
    assert _rows(f.poll()) == [("invoke", 2, 0), ("ok", 2, 0)]
    whole, started = read_histories(tmp_path, "r1", ["p-0"])
    assert f.lines == whole.num_rows and started == {"p-0": f.started}


def test_another_runs_history_is_refused(tmp_path):
    path = tmp_path / "p-0.jsonl"
    with HistoryWriter(path, {**HEAD, "run": "r0"}) as w:
        w.write({"type": "session", "ses": 1})
    with pytest.raises(RunFormatError, match="header names run 'r0'"):
        HistoryFollower(path, "r1", "p-0").poll()


def _sorted(t: pa.Table, keys) -> list[dict]:
    rows = t.to_pylist()
    return sorted(rows, key=lambda r: tuple((0,) if r[k] is None else (1, r[k]) for k in keys))


@pytest.mark.parametrize("seed", [1, 2])
def test_chunks_merged_equal_the_whole_file(tmp_path, seed):
    """Every recorded history copied over in random pieces (lines cut anywhere), polled
    between pieces: the merged parts are the batch pass's attempts and transaction flags
    of the whole file."""
    cfg_pids = [p.stem for p in (RUN / "histories").glob("*.jsonl")]
    rnd = random.Random(seed)
    parts, flags = [], []
    for pid in cfg_pids:
        data = (RUN / "histories" / f"{pid}.jsonl").read_bytes()
        dst = tmp_path / f"{pid}.jsonl"
        dst.write_bytes(b"")
        f = HistoryFollower(dst, "combined-20261123T200559Z-s1", pid)
        pos = 0
        while pos < len(data):
            step = rnd.randint(1, 40_000)
            with open(dst, "ab") as out:
                out.write(data[pos:pos + step])
            pos += step
            t = f.poll()
            if t is not None and t.num_rows:
                parts.append(H.attempt_parts(t))
                flags.append(H.txn_flags(t))
    whole, _ = read_histories(RUN / "histories", "combined-20261123T200559Z-s1", cfg_pids)
    got = H.finish_attempts(H.merge_attempt_parts(parts))
    assert _sorted(got, H.ATTEMPT_KEYS) == _sorted(H.attempts(whole), H.ATTEMPT_KEYS)
    assert (_sorted(H.merge_flags(flags), H.TXN_KEYS)
            == _sorted(H.txn_flags(whole), H.TXN_KEYS))
    shutil.rmtree(tmp_path, ignore_errors=True)
