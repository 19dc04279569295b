"""An application's columns judged from a run folder (issue 47): config.json's ``apps``,
the input at read_committed as the plain reader wrote it, the output read back at both
levels and the group's committed offsets (RUN/apps/<name>/); and what is missing makes
its columns UNKNOWN, never PASS."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from streaming.observations import SCHEMA
from verifier.judge.application import AppSpec, judge_run
from verifier.judge.model import DUP_DELIVERY, LOST
from verifier.orchestration.apps import behind
from verifier.rundata import apps as A
from verifier.rundata.layout import RunLayout

RUN = "r1"
RC, RU = "read_committed", "read_uncommitted"


class Config:
    run = RUN
    apps = {"copier-commit-before": AppSpec("copier-commit-before", "at-least-once",
                                            ("t",), "r1.app.copier-commit-before.out")}


def ident(seq: int) -> dict:
    return {"run": RUN, "pid": "idempotent-0", "ses": 1, "p": 0, "seq": seq, "txn": None,
            "ts_send": 1000 + seq}


def write_input(run_dir, n: int) -> None:
    folder = RunLayout(run_dir).observations_of("plain", RC)
    folder.mkdir(parents=True)
    rows = [{"reader": "plain", "isolation": RC, "topic": "t", "partition": 0, "offset": i,
             **ident(i), "abort": False, "ts_broker": 0, "batch": -1, "observed_at": 0,
             "foreign": False, "error": None} for i in range(n)]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / "part-00000.parquet")


def output(*seqs: int) -> pa.Table:
    return pa.Table.from_pylist(
        [{**ident(s), "foreign": False, "error": None, "batch": None, "task": None,
          "out_topic": "o", "out_partition": 0, "out_offset": i} for i, s in enumerate(seqs)],
        schema=A.READBACK_SCHEMA)


def found(outcome) -> dict[str, int]:
    return {g.kind: g.count for g in outcome.groups}


def test_each_level_is_a_column_judged_from_the_files(tmp_path):
    write_input(tmp_path, 4)
    where = A.AppLayout(tmp_path, "copier-commit-before")
    # committed up to 4, record 2 never written (lost); at read_uncommitted 3 is twice
    A.write_readback(where, {RC: output(0, 1, 3), RU: output(0, 1, 2, 3, 3)},
                     {"committed": {"t-0": 4, "other-0": 9}})
    outcomes, counts = judge_run(tmp_path, Config(), cap=5)
    by = {o.name: o for o in outcomes}
    assert set(by) == {"app:copier-commit-before@read_committed",
                       "app:copier-commit-before@read_uncommitted"}
    assert found(by["app:copier-commit-before@read_committed"]) == {LOST: 1}
    assert found(by["app:copier-commit-before@read_uncommitted"]) == {DUP_DELIVERY: 1}
    assert counts["app:copier-commit-before"] == {"sent": 4, "observed_read_committed": 3,
                                                  "observed_read_uncommitted": 5}


def test_an_output_never_read_back_leaves_both_columns_crashed(tmp_path):
    write_input(tmp_path, 2)
    A.write_readback(A.AppLayout(tmp_path, "copier-commit-before"), {},
                     {"error": "NoBrokersAvailable"})
    outcomes, _ = judge_run(tmp_path, Config())
    assert len(outcomes) == 2 and all(o.error and not o.groups for o in outcomes)
    assert "NoBrokersAvailable" in outcomes[0].summary


def test_the_drain_waits_for_the_partitions_whose_group_is_short_of_the_end():
    assert behind({"t-0": 5, "t-1": 0, "t-2": 3}, {"t-0": 5, "t-2": 1}) == {"t-2": "1/3"}
    assert behind({"t-0": 5}, {}) == {"t-0": "0/5"}


def test_the_verdict_has_the_applications_columns_and_keeps_a_crash_to_them():
    from dataclasses import replace

    from tests.unit.judge.builders import RunBuilder
    from verifier.judge import verdict as V
    from verifier.judge.application import judge
    from verifier.judge.model import CheckOutcome
    from verifier.judge.pipeline import input_log

    b = RunBuilder(mode="at-least-once")
    b.send(0, 0, offset=0).see(0, 0, 0).end_offsets(0, 1, 1)
    run = b.build()
    run = replace(run, config=replace(run.config, apps=Config.apps))
    spec = Config.apps["copier-commit-before"]
    log = input_log(pa.Table.from_pylist(
        [{"topic": "t", "partition": 0, "offset": i, "foreign": False,
          **{k: v for k, v in ident(i).items() if k != "run"}} for i in range(3)]))
    lost, _ = judge(spec, RC, log, output(0, 1), {"t-0": 3}, RUN)
    crashed = CheckOutcome(spec.column(RU), lost.kinds, error="Traceback", summary="boom")
    cols = {c["name"]: c for c in V.build(run, [lost, crashed], {})["columns"]}
    assert list(cols)[-2:] == ["app:copier-commit-before@read_committed",
                               "app:copier-commit-before@read_uncommitted"]
    rc = cols["app:copier-commit-before@read_committed"]
    assert rc["verdict"] == "FAIL" and rc["forbidden"] == [LOST]
    assert rc["expect"] == "app/at-least-once"
    ru = cols["app:copier-commit-before@read_uncommitted"]
    assert ru["verdict"] == "UNKNOWN" and any("boom" in r for r in ru["reasons"])
    # the producer's column is not made UNKNOWN by the application's crashed check
    assert not any("boom" in r for r in cols["at-least-once"]["reasons"])
