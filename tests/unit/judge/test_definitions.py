"""The definitions run on plain Arrow tables, without Spark: what a live path calls."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge.checks.derive import OBS_SCHEMA
from verifier.judge.definitions import frames, kinds, rules
from verifier.judge.model import Drain

COMBOS = [("plain", "read_committed"), ("plain", "read_uncommitted")]


def _obs(rows):
    base = {"topic": "t", "partition": 0, "fgn": False, "pid": "p1", "p": 0, "ses": 1,
            "txn": None, "ts_send": 1}  # fmt: skip
    return pa.Table.from_pylist([{**base, **r} for r in rows], OBS_SCHEMA)


SENDS = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("pid", pa.string()),
                   ("p", pa.int32()), ("seq", pa.int64()), ("ok", pa.bool_()),
                   ("info", pa.bool_()), ("must_see", pa.bool_()), ("t_send", pa.int64()),
                   ("transactional", pa.bool_()), ("acked_offset", pa.int64())])  # fmt: skip


def _sends(seqs):
    return pa.Table.from_pylist(
        [{"topic": "t", "partition": 0, "pid": "p1", "p": 0, "seq": s, "ok": True,
          "info": False, "must_see": True, "t_send": 1, "transactional": False,
          "acked_offset": s} for s in seqs], SENDS)  # fmt: skip


def test_one_partition_judged_from_arrow_rows_alone():
    ctx = frames.Ctx(combos=COMBOS, drain=Drain(True), pids=["p1"], topics={"p1": "t"},
                     status=pa.table({"pid": pa.array([], pa.string()),
                                      "ses": pa.array([], pa.int32()),
                                      "txn": pa.array([], pa.int64()),
                                      "status": pa.array([], pa.string()),
                                      "abort_intent": pa.array([], pa.bool_())}))  # fmt: skip
    rows = [{"offset": o, "seq": s, "ci": c} for o, s in ((0, 0), (1, 2), (2, 1)) for c in (0, 1)]
    out = kinds.run_pass(ctx, "t", 0, _obs(rows), _sends([0, 1, 2, 3])).to_pylist()
    got = {(r["kind"], r["isolation"], r["seq"], r["offset"]) for r in out if r["rec"] == "a"}
    assert got == {("reorder", "read_committed", 1, 2), ("reorder", "read_uncommitted", 1, 2),
                   ("lost", "read_committed", 3, 3), ("lost", "read_uncommitted", 3, 3)}


def test_torn_hanging_and_undecodable_rules():
    assert rules.torn(3, 2) and not rules.torn(3, 3) and not rules.torn(3, 0)
    assert rules.hanging(4, 5) and not rules.hanging(5, 5)
    assert rules.undecodable({"foreign": True, "error": "bad"}, "r", {"p1"}) == "bad"
    assert rules.undecodable({"run": "x", "pid": "p1"}, "r", {"p1"}).startswith("another run")
    assert rules.undecodable({"run": "r", "pid": "p1"}, "r", {"p1"}) is None
