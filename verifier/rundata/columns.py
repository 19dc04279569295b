"""The report's columns: how each is named, in one place (docs/expectations.md §4).

A run's report has one column per producer mode, except that a transactional
expectation gets one column per isolation level (what a read_committed reader may see
differs from a read_uncommitted one's), and one column per pipeline under test. The
verdict, the document of a run that crashed, the live progress line and the advice all
name columns with these functions, so a column is called the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from verifier.rundata.vocab import ISOLATIONS, MODES, READ_COMMITTED

#: the expectation whose records are judged per isolation level, one column each
SPLIT_BY_ISOLATION = "transactional"
#: a pipeline's column is ``pipeline:<name>``: never a producer mode
PIPELINE_PREFIX = "pipeline:"
#: an application's columns are ``app:<name>@<isolation>`` (verifier.rundata.apps): its
#: output topic is read back at both levels, like the transactional producers' topics
APP_PREFIX = "app:"
#: the isolation levels as the live progress line abbreviates them
SHORT_ISOLATION = {READ_COMMITTED: "rc", "read_uncommitted": "ru"}


def column_name(mode: str, expect: str, isolation: str, *, short: bool = False) -> str:
    """The column that shows ``mode``'s records read at ``isolation``: ``mode`` itself,
    or ``mode@<isolation>`` when ``expect`` is judged per isolation level (``mode@rc``
    with ``short``, as the progress line prints it)."""
    if expect != SPLIT_BY_ISOLATION:
        return mode
    return f"{mode}@{SHORT_ISOLATION[isolation] if short else isolation}"


def pipeline_column(name: str) -> str:
    """The column of the pipeline named ``name`` (also its label in the checks)."""
    return PIPELINE_PREFIX + name


def is_pipeline_column(name: str) -> bool:
    """Is ``name`` a pipeline's column (not a producer mode's)?"""
    return str(name).startswith(PIPELINE_PREFIX)


def is_app_column(name: str) -> bool:
    """Is ``name`` an application's column (or its label)?"""
    return str(name).startswith(APP_PREFIX)


def report_modes(labels: Iterable[str]) -> list[str]:
    """Mode labels in report order: the presets in their canonical order, then the
    users' labels sorted."""
    labels = set(labels)
    presets = [m for m in MODES if m in labels]
    return presets + sorted(labels - set(presets))


@dataclass(frozen=True)
class ColumnSpec:
    """One report column: its name, the mode (or pipeline label) whose records it shows,
    the expectation-table row that judges them, and the isolation levels read."""

    name: str
    mode: str
    expect: str
    isolations: tuple[str, ...]


def mode_columns(mode: str, expect: str) -> list[ColumnSpec]:
    """The columns of one producer mode."""
    if expect == SPLIT_BY_ISOLATION:
        return [ColumnSpec(column_name(mode, expect, iso), mode, expect, (iso,))
                for iso in ISOLATIONS]
    return [ColumnSpec(mode, mode, expect, ISOLATIONS)]


def app_columns(label: str, expect: str) -> list[ColumnSpec]:
    """The columns of one application (``label``: ``app:<name>``), one per isolation
    level its output is read back at, both judged by its claim's row (``expect``)."""
    return [ColumnSpec(f"{label}@{iso}", label, expect, (iso,)) for iso in ISOLATIONS]


def run_columns(producers: Iterable, pipelines: Iterable = (),
                apps: Iterable = ()) -> list[ColumnSpec]:
    """Every column of a run, in report order. ``producers``: objects with ``mode`` and
    ``expect`` (several may share a mode: the first one's expectation applies);
    ``pipelines``: objects with ``label``, ``expect`` (its expectation row) and
    ``isolation``, after the modes; ``apps``: objects with ``label`` and ``expect``,
    last."""
    expect_of: dict[str, str] = {}
    for p in producers:
        expect_of.setdefault(p.mode, p.expect)
    out = [c for mode in report_modes(expect_of) for c in mode_columns(mode, expect_of[mode])]
    out += [ColumnSpec(p.label, p.label, p.expect, (p.isolation,)) for p in pipelines]
    out += [c for a in apps for c in app_columns(a.label, a.expect)]
    return out


__all__ = ["APP_PREFIX", "PIPELINE_PREFIX", "SPLIT_BY_ISOLATION", "ColumnSpec", "app_columns",
           "column_name", "is_app_column", "is_pipeline_column", "mode_columns",
           "pipeline_column", "report_modes", "run_columns"]
