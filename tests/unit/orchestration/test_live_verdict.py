"""The run's verdict from the live path, right after the drain (issue 16), on recorded runs
whose observer files are fed through the live checks as the sink would: followed in
steps while "the run goes" it equals the same run read in one go; as recorded nothing is
forbidden; a record the observer never read is lost, a committed transaction it read in
part is torn, two levels that read different records at an offset are inconsistent. That
the batch pass names exactly the same anomalies on the same data is checked in the
integration tier (tests/integration/orchestration/test_live_verdict_batch.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from streaming.live import LiveSink, batch_of, observation_files
from verifier.assess.facts import read_facts
from verifier.assess.finish import PENDING, CrossCheck, Ending, Judged, finish
from verifier.assess.follow import RunFollower
from verifier.assess.live import live_pass
from verifier.judge.checks.load import load_config
from verifier.rundata.formats import read_json
from verifier.rundata.layout import layout

DATA = Path(__file__).parents[2] / "data" / "runs"
#: why the recorded combined run's columns are UNKNOWN: its ack-loss rule's heal detail
#: has no per-client counts (recorded before them)
NOT_MEASURED = ("exposure not measured: fault ack-loss #1: what it acted on was not "
                "measured (per-client counts not recorded)")
ISOS = ("read_committed", "read_uncommitted")


def _feed(run_dir: Path, follower: RunFollower | None = None, every: int = 1) -> None:
    """The live checks over the run's observer files, batch by batch (the follower polled
    every ``every`` batches, as during a run)."""
    cfg = read_json(layout(run_dir).config, "run-config")
    topics = {pid: p["topic"] for pid, p in cfg["producers"].items()}
    sinks = {iso: LiveSink(run_dir, iso, cfg["sink"], cfg["run"], topics) for iso in ISOS}
    files = {iso: observation_files(run_dir, iso) for iso in ISOS}
    for i in range(max(len(f) for f in files.values())):
        for iso in ISOS:
            if i < len(files[iso]):
                f = files[iso][i]
                sinks[iso](pq.read_table(f), batch_of(f.name), f.name)
        if follower is not None and i % every == 0:
            follower.poll()


def _mutate(run_dir: Path, iso: str, where, change) -> None:
    """Rewrite the spark observer's files at ``iso``: rows matching ``where(t)`` changed
    by ``change(t, mask)`` (a filtered table)."""
    for f in observation_files(run_dir, iso):
        t = pq.read_table(f)
        hit = pc.fill_null(where(t), False)
        if pc.any(hit).as_py():
            pq.write_table(change(t, hit), f)


def live_doc(run_dir: Path, follower: RunFollower) -> dict | None:
    """The live path's verdict as a chaos run shows it right after the drain (its
    cross-check pending); None without live checks."""
    facts = read_facts(run_dir, config=follower.config)
    got = live_pass(facts, follower)
    if got is None:
        return None
    return finish(Judged(got[0], facts, CrossCheck(PENDING)), Ending(connections=False))


def _copy(tmp_path, name: str) -> Path:
    return shutil.copytree(DATA / name, tmp_path / name)


def _kinds(doc: dict) -> dict:
    return {c["name"]: {k: a["count"] for k, a in c["anomalies"].items() if a["count"]}
            for c in doc["columns"]}


def test_no_live_state_no_verdict(tmp_path):
    run = _copy(tmp_path, "ack-loss")
    assert live_doc(run, RunFollower(run, load_config(layout(run).config))) is None


def test_followed_in_steps_equals_read_in_one_go(tmp_path):
    run = _copy(tmp_path, "combined")
    follower = RunFollower(run, load_config(layout(run).config))
    _feed(run, follower)
    stepped = live_doc(run, follower)
    once = live_doc(run, RunFollower(run, load_config(layout(run).config)))
    assert stepped["verdict_from"]["follow"]["polls"] > 2
    assert _kinds(stepped) == _kinds(once)
    assert [c["counts"] for c in stepped["columns"]] == [c["counts"] for c in once["columns"]]
    # nothing forbidden; the recorded ack loss predates the per-client counts, so what it
    # did to each column was not measured: never PASS (verifier.judge.verdict.apply_exposure)
    assert [c["verdict"] for c in stepped["columns"]] == ["UNKNOWN"] * 5
    # (and the recording keeps no observer checkpoint: the observer kill's neither)
    assert all(not c["forbidden"] and c["reasons"][0] == NOT_MEASURED
               for c in stepped["columns"])
    # while followed, what stays open is the lag and what a level never sees
    assert stepped["verdict_from"]["follow"]["open"] == once["verdict_from"]["follow"]["open"]


@pytest.mark.parametrize("name", ["combined", "mutated"])
def test_histories_followed_in_pieces_count_as_read_in_one_go(tmp_path, request, name):
    """The histories appended in random pieces while followed, the follower's ledger
    folding every few hundred attempts (a long run's, in small): the counts, the
    anomalies and what stays open at the end are those of the follower that reads
    every file at once. Incremental counts that drifted from the batch ones show here."""
    import random

    from verifier.judge.checks.load import load_drain

    run = request.getfixturevalue("mutated") if name == "mutated" else _copy(tmp_path, name)
    if name != "mutated":
        _feed(run)
    hist = {p: p.read_bytes() for p in (run / "histories").glob("*.jsonl")}
    for p in hist:
        p.write_bytes(b"")
    follower = RunFollower(run, load_config(layout(run).config))
    follower.rest.ledger.fold_rows = 300
    rnd, pos = random.Random(3), dict.fromkeys(hist, 0)
    while any(pos[p] < len(data) for p, data in hist.items()):
        for p, data in hist.items():
            step = rnd.randint(1, 30_000)
            with open(p, "ab") as out:
                out.write(data[pos[p]:pos[p] + step])
            pos[p] += step
        follower.poll()
    assert follower.rest.ledger.base is not None  # folded while followed
    drain = load_drain(layout(run).drain)
    stepped = follower.result(drain)
    once = RunFollower(run, load_config(layout(run).config)).result(drain)
    assert stepped["counts"] == once["counts"]
    assert sorted(map(repr, stepped["table"].to_pylist())) == \
        sorted(map(repr, once["table"].to_pylist()))
    assert stepped["follow"]["open"] == once["follow"]["open"]


def test_an_acknowledged_record_never_read_is_lost(tmp_path):
    run = _copy(tmp_path, "ack-loss")
    for iso in ISOS:
        _mutate(run, iso, lambda t: pc.and_(pc.and_(pc.equal(t["pid"], "idempotent-0"),
                                                    pc.equal(t["seq"], 5)),
                                            pc.equal(t["partition"], 0)),
                lambda t, hit: t.filter(pc.invert(hit)))
    _feed(run)
    doc = live_doc(run, RunFollower(run, load_config(layout(run).config)))
    col = next(c for c in doc["columns"] if c["name"] == "idempotent")
    assert col["verdict"] == "FAIL" and col["forbidden"] == ["lost"]
    assert col["anomalies"]["lost"]["count"] == 2  # at both levels


def _committed_record(run: Path) -> tuple[int, int, int]:
    """(txn, p, seq) of the first record of the first committed transaction with more
    than one record, from the transactional history."""
    import orjson

    lines = [orjson.loads(x) for x in
             (run / "histories" / "transactional-0.jsonl").read_bytes().splitlines()[1:]]
    ok = {(x["ses"], x["txn"]) for x in lines if x.get("f") == "commit" and x["type"] == "ok"}
    recs: dict = {}
    for x in lines:
        if x.get("f") == "send" and x["type"] == "ok" and (x["ses"], x["txn"]) in ok:
            recs.setdefault((x["ses"], x["txn"]), []).append((x["p"], x["seq"]))
    (ses, txn), rs = next((k, v) for k, v in recs.items() if len(v) > 1)
    return txn, *rs[0]


@pytest.fixture
def mutated(tmp_path):
    """The combined run with read_committed missing one record of a committed
    transaction (torn there, and lost) and read_uncommitted reading another send time
    at one offset (inconsistent)."""
    run = _copy(tmp_path, "combined")
    txn, p, seq = _committed_record(run)
    _mutate(run, "read_committed",
            lambda t: pc.and_(pc.and_(pc.equal(t["pid"], "transactional-0"),
                                      pc.equal(t["seq"], seq)), pc.equal(t["p"], p)),
            lambda t, hit: t.filter(pc.invert(hit)))
    _mutate(run, "read_uncommitted",
            lambda t: pc.and_(pc.and_(pc.equal(t["pid"], "idempotent-0"),
                                      pc.equal(t["seq"], 3)), pc.equal(t["p"], 1)),
            lambda t, hit: t.set_column(t.schema.get_field_index("ts_send"), "ts_send",
                                        pc.if_else(hit, pc.add(t["ts_send"], 1),
                                                   t["ts_send"])))
    _feed(run)
    return run


def test_torn_and_inconsistent_found_live(mutated):
    doc = live_doc(mutated, RunFollower(mutated, load_config(layout(mutated).config)))
    kinds = _kinds(doc)
    assert kinds["transactional@read_committed"].get("torn-transaction") == 1
    assert kinds["transactional@read_committed"].get("lost") == 1
    assert kinds["idempotent"].get("inconsistent-offset") == 1
    assert {c["name"]: c["verdict"] for c in doc["columns"]} == {
        "at-most-once": "UNKNOWN", "at-least-once": "UNKNOWN", "idempotent": "FAIL",
        "transactional@read_committed": "FAIL", "transactional@read_uncommitted": "UNKNOWN"}


def test_a_batch_pass_that_judged_otherwise_or_crashed_leaves_the_column_open(tmp_path):
    """The cross-check never hides: a column the batch pass judged FAIL (here by hand)
    is UNKNOWN with the batch's reasons; a crashed batch pass leaves every column open."""
    run = _copy(tmp_path, "combined")
    _feed(run)
    facts = read_facts(run)
    built, _ = live_pass(facts, RunFollower(run, load_config(layout(run).config)))
    agree = {"compared": True, "agree": True, "n_differ": 0, "differ": [], "modes": []}
    cols = [{**c, "verdict": "FAIL" if c["name"] == "idempotent" else c["verdict"],
             "forbidden": ["lost"] if c["name"] == "idempotent" else c["forbidden"]}
            for c in built["columns"]]
    batch = {**built, "columns": cols}  # as the batch pass would have built it
    doc = finish(Judged(built, facts, CrossCheck(agree, batch=batch, seconds=3.0)))
    got = {c["name"]: c["verdict"] for c in doc["columns"]}
    assert got["idempotent"] == "UNKNOWN" and got["at-least-once"] == "UNKNOWN"
    reasons = {c["name"]: c["reasons"] for c in doc["columns"]}
    # the cross-check's reason on its column alone (the others: the ack loss not measured)
    assert reasons["idempotent"] == ["the batch cross-check judged it FAIL (forbidden lost)"]
    assert reasons["at-least-once"][0] == NOT_MEASURED
    assert doc["exit_code"] == 2 and not doc["batch"]["agree"]
    assert doc["batch"]["exit_code"] == 1 and doc["batch"]["verdicts"]["idempotent"] == "FAIL"
    assert built["columns"][0]["verdict"] == "PASS"  # the built document stays as it was
    crashed = {"compared": False, "agree": False, "n_differ": 0, "differ": [], "modes": [],
               "error": "boom"}
    doc = finish(Judged(built, facts, CrossCheck(crashed, batch={}, seconds=1.0)))
    assert {c["verdict"] for c in doc["columns"]} == {"UNKNOWN"} and doc["exit_code"] == 2
    assert doc["batch"]["exit_code"] is None


@pytest.mark.parametrize("seed", range(6))
def test_first_rows_are_those_of_a_stable_sort_of_the_whole_table(seed):
    """The verdict's samples (outcomes_of): the first rows by topic, partition, offset,
    pid, seq, txn with nulls first, ties in table order, the same as sorting everything,
    with ties, all-null and partly null key columns."""
    import random

    import pyarrow as pa
    import pyarrow.compute as pc

    from verifier.assess.live import first_rows

    rnd = random.Random(seed)
    n = rnd.choice([5, 300, 2000])
    txn = ([None] * n if seed % 3 == 0 else
           [rnd.choice([None, 1, 2]) for _ in range(n)] if seed % 3 == 1 else
           [rnd.randrange(3) for _ in range(n)])
    t = pa.table({"topic": [rnd.choice("abc") for _ in range(n)],
                  "partition": [rnd.randrange(3) for _ in range(n)],
                  "offset": [rnd.randrange(40) for _ in range(n)],
                  "pid": [rnd.choice(["p1", "p2"]) for _ in range(n)],
                  "seq": [rnd.randrange(5) for _ in range(n)],
                  "txn": pa.array(txn, pa.int64()),
                  "row": list(range(n))})  # which row: ties must keep table order
    order = [(k, "ascending", "at_start")
             for k in ("topic", "partition", "offset", "pid", "seq", "txn")]
    for cap in (1, 7, 20):
        want = t.take(pc.sort_indices(t, sort_keys=order)[:cap])
        assert first_rows(t, order, cap).to_pylist() == want.to_pylist(), (seed, cap)
