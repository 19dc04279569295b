"""The self-test's mutation engine: copies stay self-consistent runs, each mutation says
what it expects, the judging of a copy counts misses and false alarms. A short run of the
whole engine (which judges through Spark) is in the integration tier
(tests/integration/judge/test_selftest_engine.py)."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from pathlib import Path

import orjson
import pyarrow.compute as pc
import pytest

from verifier.cli import EXIT_INCOMPLETE, main
from verifier.judge.checks.load import read_run_files
from verifier.judge.definitions.stream import LIVE_KINDS
from verifier.judge.selftest import _judge
from verifier.judge.selftest.analysis import Analysis, live_rows
from verifier.judge.selftest.image import RunImage
from verifier.judge.selftest.mutations import (
    MUTATIONS,
    Catalog,
    Mutation,
    expect,
    hanging,
    inconsistent_observer,
    lost,
    torn,
)  # fmt: skip
from verifier.judge.selftest.scope import scope_of

BASELINE = Path(__file__).resolve().parents[2] / "data" / "runs" / "baseline"


def _offsets(img: RunImage, topic: str, part: int) -> dict:
    out = {}
    for combo, t in img.obs.items():
        m = pc.and_(pc.equal(t["topic"], topic), pc.equal(t["partition"], part))
        out[combo] = sorted(t.filter(m)["offset"].to_pylist())
    return out


def test_shift_moves_every_later_offset_everywhere(tmp_path):
    img = RunImage.load(BASELINE)
    topic = img.topic_of("idempotent-0")
    key = f"{topic}-0"
    before = _offsets(img, topic, 0)
    acked_before = sorted(x["offset"] for x in img.histories["idempotent-0"]
                          if x.get("type") == "ok" and x.get("p") == 0)  # fmt: skip
    ends_before = {i: img.drain["end_offsets"][i][key] for i in img.drain["end_offsets"]}
    pos_before = {i: img.drain["observer_positions"][i][key]
                  for i in img.drain["observer_positions"]}  # fmt: skip
    assert 5 in acked_before and all(before.values())
    img.shift(topic, 0, 5, 1)
    after = _offsets(img, topic, 0)
    for combo, offs in before.items():
        assert after[combo] == [o + 1 if o >= 5 else o for o in offs]
    acked = sorted(x["offset"] for x in img.histories["idempotent-0"]
                   if x.get("type") == "ok" and x.get("p") == 0)  # fmt: skip
    assert acked == [o + 1 if o >= 5 else o for o in acked_before] and 5 not in acked
    assert {i: img.drain["end_offsets"][i][key] for i in ends_before} == {
        i: e + 1 for i, e in ends_before.items()}
    assert {i: img.drain["observer_positions"][i][key] for i in pos_before} == {
        i: e + 1 for i, e in pos_before.items()}
    copy = img.write(tmp_path / "copy")
    files = read_run_files(copy)  # still a valid run folder
    drain = orjson.loads((copy / "drain.json").read_bytes())
    assert drain["end_offsets"]["read_uncommitted"][key] == ends_before["read_uncommitted"] + 1
    assert files.history.num_rows > 0


@pytest.mark.parametrize("make", MUTATIONS, ids=[m.__name__ for m in MUTATIONS])
def test_every_mutation_applies_to_a_recorded_run_and_writes_a_valid_copy(make, tmp_path):
    """... and stays within a scope of the run (verifier.judge.selftest.scope): a few of
    its partitions, among them every place an injected anomaly is expected."""
    run = RunImage.load(BASELINE)
    img = run.clone()
    m = make(img, Catalog(img, [], random.Random("1")))
    assert isinstance(m, Mutation)
    assert bool(m.expects) != m.legal, m
    read_run_files(img.write(tmp_path / "copy"))
    scope = scope_of(run, img)
    assert scope is not None and scope.parts, m
    everything = {(t, p) for pid in run.config["producers"]
                  for t in [run.topic_of(pid)] for p in run.partitions(t)}  # fmt: skip
    assert scope.parts < everything, m
    for e in m.expects:
        at = dict(e.match)
        if "topic" in at and "partition" in at:
            assert (at["topic"], at["partition"]) in scope.parts, (e.where(), scope)


def _analysis(counts: dict, rows=(), verdict="PASS") -> Analysis:
    from verifier.judge.verdict import Column

    col = Column("idempotent", "idempotent", "idempotent", ("read_committed", "read_uncommitted"))
    return Analysis(list(rows), Counter(counts), {"idempotent": verdict}, {"idempotent": col},
                    [], "exactly-once", set())  # fmt: skip


def test_judging_a_copy_finds_misses_wrong_places_false_alarms_and_verdicts():
    m = Mutation("lost", "lost", "t-0@3", [expect("lost", "idempotent", "read_committed", 1,
                                                  topic="t", partition=0, seq=3)])  # fmt: skip
    base = _analysis({("reorder", "idempotent", "read_committed"): 1})
    hit = {"kind": "lost", "mode": "idempotent", "isolation": "read_committed", "topic": "t",
           "partition": 0, "seq": 3}  # fmt: skip
    good = _analysis({("reorder", "idempotent", "read_committed"): 1,
                      ("lost", "idempotent", "read_committed"): 1}, [hit], "FAIL")
    assert _judge(m, base, good).ok
    elsewhere = _analysis({("reorder", "idempotent", "read_committed"): 1,
                           ("lost", "idempotent", "read_committed"): 1},
                          [{**hit, "partition": 1}], "FAIL")  # fmt: skip
    row = _judge(m, base, elsewhere)
    assert not row.detected and row.verdict_ok
    noisy = _analysis({("reorder", "idempotent", "read_committed"): 2,
                       ("lost", "idempotent", "read_committed"): 1}, [hit], "FAIL")
    row = _judge(m, base, noisy)
    assert row.detected and row.false_alarms == ["reorder idempotent@read_committed +1"]
    lenient = _analysis({("reorder", "idempotent", "read_committed"): 1,
                         ("lost", "idempotent", "read_committed"): 1}, [hit], "PASS")
    row = _judge(m, base, lenient)
    assert not row.verdict_ok and row.verdicts == ["idempotent: PASS (expected FAIL)"]
    legal = Mutation("marker-gap", "legal", "t-0@3")
    assert _judge(legal, base, base).ok and not _judge(legal, base, noisy).ok


def test_selftest_of_an_unreadable_run_exits_2(tmp_path, capsys):
    assert main(["selftest", str(tmp_path / "nope")]) == EXIT_INCOMPLETE
    assert "not a run folder" in capsys.readouterr().err


@pytest.mark.parametrize("make", [lost, torn, hanging, inconsistent_observer],
                         ids=lambda m: m.__name__)
def test_the_live_path_of_a_copy_finds_what_only_its_remainder_decides(make, tmp_path):
    """lost, torn, hanging and an inconsistent offset between the observer's two levels
    are none of the stream checks' kinds: only the follower's remainder after the drain
    (verifier.judge.checks.remainder), which the self-test runs on every copy, finds
    them. Without it the live side of the copy would miss the injected anomaly."""
    base = Counter(_keys(live_rows(read_run_files(BASELINE), BASELINE)[0]))
    img = RunImage.load(BASELINE)
    m = make(img, Catalog(img, [], random.Random("1")))
    copy = img.write(tmp_path / "copy")
    rows, whole = live_rows(read_run_files(copy), copy)
    assert whole
    new = Counter(_keys(rows)) - base
    new_rows = [r for r in rows if _key(r) in new]
    wanted = [e for e in m.expects if e.kind not in LIVE_KINDS]
    assert {e.kind for e in wanted} >= {m.kind}, m.expects
    for e in wanted:
        e = dataclasses.replace(e, match=tuple((k, v) for k, v in e.match if k != "reader"))
        assert any(r["kind"] == e.kind and r["isolation"] == e.isolation and e.matches(r)
                   for r in new_rows), (e.where(), new_rows)  # fmt: skip


def _key(r: dict) -> tuple:
    return tuple(str(r.get(k)) for k in ("kind", "isolation", "topic", "partition", "pid",
                                         "ses", "seq", "txn", "offset"))  # fmt: skip


def _keys(rows: list[dict]) -> list[tuple]:
    return [_key(r) for r in rows]


