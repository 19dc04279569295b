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
