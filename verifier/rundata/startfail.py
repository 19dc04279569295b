"""Generators that could not start: ``RUN/generators-failed.json`` (docs/formats.md §5).

A generator that exits before its first completed send (a setting its client rejects at
construction, a missing codec) is recorded here by the orchestrator: its exit code and
the last line of its log. The run goes on with the other generators; the judge makes
only that generator's column UNKNOWN, with that line (``verifier analyze`` reads the same
file offline).

    {"format": "generator-start-failures", "version": 1,
     "generators": {"user-0": {"exit_code": 64, "line": "java generator: usage error: ..."}}}
"""

from __future__ import annotations

from pathlib import Path

from verifier.rundata.formats import read_json, write_json

FORMAT = "generator-start-failures"


def last_line(text: str) -> str:
    """The last non-blank line of a log (what a generator said as it gave up)."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return "(its log is empty)"


def read_start_failures(path: Path) -> dict[str, dict]:
    """pid -> ``{"exit_code", "line"}``; empty when no generator failed to start."""
    path = Path(path)
    if not path.exists():
        return {}
    gens = read_json(path, FORMAT).get("generators") or {}
    return {str(pid): dict(entry) for pid, entry in gens.items()}


def record_start_failure(path: Path, pid: str, exit_code: int | None, line: str) -> dict:
    """Add ``pid`` to the file (written atomically); returns its entry."""
    gens = read_start_failures(path)
    gens[pid] = {"exit_code": exit_code, "line": line}
    write_json(Path(path), FORMAT, {"generators": gens}, indent=True)
    return gens[pid]


def describe(entry: dict) -> str:
    """One line: ``exited 64 before producing: <its last log line>``."""
    return f"exited {entry.get('exit_code')} before producing: {entry.get('line') or '?'}"
