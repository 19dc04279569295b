"""The nemesis history (docs/formats.md §3): its one reader.

The writer is the nemesis itself (:mod:`verifier.harness.faults.nemesis`); it writes the
header from :data:`HEADER`. Operations are few (a handful per fault), so they are read as
Python objects.
"""

from __future__ import annotations

from pathlib import Path

from verifier.rundata.formats import RunFormatError, read_jsonl

NEMESIS_FORMAT = "nemesis-history"


def read_nemesis(path: Path, run: str = "") -> list[dict]:
    """Nemesis operations, in file order; a torn last line is ignored. ``run``, when
    given, must be the run the header names (a run without faults still writes it)."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError(path, "missing (a run without faults still writes its header)")
    head, ops = read_jsonl(path, NEMESIS_FORMAT)
    if run and head.get("run") not in (None, run):
        raise RunFormatError(path, f"header names run {head.get('run')!r}, not {run!r}")
    return ops
