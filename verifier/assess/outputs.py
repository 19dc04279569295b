"""The finished documents on disk: a run's verdict.json, junit.xml and report.html, and a
chaos matrix's, from the documents in memory (the grid and its exit code made here)."""

from __future__ import annotations

from pathlib import Path

from verifier.assess import exitcodes as X
from verifier.judge.verdict import combine
from verifier.rundata.layout import RunLayout


def write_outputs(doc: dict, out_dir: Path | str) -> list[Path]:
    """verdict.json, junit.xml and report.html of one run into ``out_dir``."""
    from verifier.report import write_html, write_junit, write_verdict

    where = RunLayout(Path(out_dir))
    return [write_verdict(doc, where.verdict), write_junit([doc], where.junit),
            write_html(doc, where.report)]


def combined(docs: list[dict]) -> dict:
    """The scenario x mode grid of several runs' finished documents, with its exit code
    (``verifier.judge.verdict.combine``; the code over every outcome of every cell)."""
    grid = combine(docs)
    X.set_grid(grid)
    return grid


def write_matrix(docs: list[dict], out_dir: Path, meta: dict) -> dict:
    """The grid of ``docs`` (:func:`combined`), written as the matrix's verdict.json,
    junit.xml and report.html; returns it."""
    from verifier.report.matrix import write_matrix as write

    grid = combined(docs)
    write(grid, docs, out_dir, meta)
    return grid
