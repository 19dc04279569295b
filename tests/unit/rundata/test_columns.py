"""The one column-naming rule (verifier.rundata.columns)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verifier.rundata.columns import (
    ColumnSpec,
    column_name,
    is_pipeline_column,
    pipeline_column,
    report_modes,
    run_columns,
)

RC, RU = "read_committed", "read_uncommitted"


@dataclass
class _Producer:
    mode: str
    expect: str


@dataclass
class _Pipeline:
    label: str
    expect: str
    isolation: str


def test_a_transactional_expectation_has_a_column_per_isolation_level():
    assert column_name("transactional", "transactional", RC) == "transactional@read_committed"
    assert column_name("user:tx", "transactional", RU) == "user:tx@read_uncommitted"
    assert column_name("transactional", "transactional", RU, short=True) == "transactional@ru"
    assert column_name("idempotent", "idempotent", RC) == "idempotent"
    assert column_name("user:a", "at-least-once", RU, short=True) == "user:a"


def test_pipelines_are_columns_of_their_own():
    assert pipeline_column("delta") == "pipeline:delta"
    assert is_pipeline_column("pipeline:delta") and not is_pipeline_column("idempotent")


def test_a_runs_columns_presets_first_then_users_then_pipelines():
    producers = [_Producer("user:b", "idempotent"), _Producer("transactional", "transactional"),
                 _Producer("idempotent", "idempotent"), _Producer("idempotent", "idempotent"),
                 _Producer("at-most-once", "at-most-once")]
    assert report_modes(p.mode for p in producers) == [
        "at-most-once", "idempotent", "transactional", "user:b"]
    cols = run_columns(producers, [_Pipeline("pipeline:p", "pipeline/exactly-once", RC)])
    assert [c.name for c in cols] == [
        "at-most-once", "idempotent", "transactional@read_committed",
        "transactional@read_uncommitted", "user:b", "pipeline:p"]
    assert cols[2] == ColumnSpec("transactional@read_committed", "transactional",
                                 "transactional", (RC,))
    assert cols[-1] == ColumnSpec("pipeline:p", "pipeline:p", "pipeline/exactly-once", (RC,))
    assert cols[0].isolations == (RC, RU)


def test_the_judges_columns_are_the_rules(tmp_path):
    from verifier.judge.checks.load import load_config

    run = Path(__file__).resolve().parents[2] / "data" / "runs" / "pipeline-restart"
    config = load_config(run / "config.json")
    cols = run_columns(config.producers.values(), config.pipelines.values())
    assert [c.name for c in cols][-1].startswith("pipeline:")
    assert {c.mode for c in cols} >= set(config.modes())
