"""Every exit code the product gives for a verdict (DESIGN §7), in one place.

A run's code follows its columns' verdicts: 1 if a column broke its promise (FAIL), else
2 if one could not be established (UNKNOWN, or nothing shown at all: every column
SKIPPED, no column), else 3 if a fault missed a column (NOT EXERCISED), else 0. A
connection check the scenario makes forbidden fails a run that would otherwise pass.
The grids fold these: the scenario x mode matrix (and ``--repeat N``: every outcome of
every cell), the versions grid (the worst run's), the known-bugs grid (whether the runs
match the documented statuses). The documents hold the code under ``exit_code``; this
module is the only one that sets it.
"""

from __future__ import annotations

from collections.abc import Iterable

from verifier.rundata.vocab import (  # the codes and what each means: one table, there
    EXIT_ANOMALY,
    EXIT_INCOMPLETE,
    EXIT_OK,
    SKIPPED,
    VERDICT_ORDER,
    verdict,
)


def of_verdicts(verdicts: Iterable[str]) -> int:
    """The code of the worst verdict (rundata.vocab.VERDICTS: 1 if any mode broke its
    promise, else 2 if any is unknown, else 3 if a fault missed a column, else 0); 2 when
    nothing was shown at all (every column SKIPPED, or none)."""
    verdicts = list(verdicts)
    if all(v == SKIPPED for v in verdicts):  # also: no verdicts
        return EXIT_INCOMPLETE
    return verdict(max(verdicts, key=VERDICT_ORDER.index)).exit_code


def of_run(verdicts: Iterable[str], connections_failed: bool = False) -> int:
    """One run: its columns' code; a forbidden connection finding makes a run that would
    otherwise pass exit 1 (docs/connections.md)."""
    code = of_verdicts(verdicts)
    return EXIT_ANOMALY if connections_failed and code == EXIT_OK else code


def set_run(doc: dict) -> int:
    """``doc["exit_code"]`` of a finished verdict document (its columns, its
    ``connections`` section); returns it. A live verdict checked by the batch pass also
    records what the batch pass alone would have exited with (``batch``: None when it
    crashed)."""
    failed = bool((doc.get("connections") or {}).get("failed"))
    doc["exit_code"] = of_run((c["verdict"] for c in doc["columns"]), failed)
    batch = doc.get("batch")
    if batch is not None:
        verdicts = batch.get("verdicts") or {}
        batch["exit_code"] = of_run(verdicts.values(), failed) if verdicts else None
    return doc["exit_code"]


def set_grid(grid: dict) -> int:
    """The scenario x mode grid's code (``verifier.judge.verdict.combine``): the same rule
    over every outcome of every cell (``chaos --repeat N``: N per cell)."""
    every = [v for row in grid["outcomes"].values() for vs in row.values() for v in vs]
    grid["exit_code"] = of_verdicts(every)
    return grid["exit_code"]


def of_matrix(grid: dict, docs: list[dict]) -> tuple[int, str | None]:
    """What ``verifier chaos`` exits with after a matrix, and why when it is not the
    grid's: a forbidden connection finding in a run (1), or a self-test that did not hold
    (2: the verdicts were not shown to hold on that run), each only over a passing grid."""
    code = grid["exit_code"]
    if code != EXIT_OK:
        return code, None
    if any((d.get("connections") or {}).get("failed") for d in docs):
        return EXIT_ANOMALY, "connections"
    if any("selftest" in d and not d["selftest"]["ok"] for d in docs):
        return EXIT_INCOMPLETE, "selftest"
    return code, None


def _worse(a: int, b: int) -> int:
    """Exit codes by severity: 1 (a broken promise) over 2 (unknown) over 0; any other
    code ranks with 2, and of two equal ranks the first stays."""
    rank = {0: 0, 2: 1, 1: 2}
    return a if rank.get(a, 1) >= rank.get(b, 1) else b


def set_versions(grid: dict, codes: Iterable[int], not_run: bool) -> int:
    """The versions grid's code: the worst of its runs' (``codes``); a Kafka version whose
    cluster never ran (``not_run``) leaves it incomplete (2) unless a run broke a promise."""
    worst = EXIT_OK
    for code in codes:
        worst = _worse(worst, int(code))
    if not_run:
        worst = EXIT_ANOMALY if worst == EXIT_ANOMALY else EXIT_INCOMPLETE
    grid["exit_code"] = worst
    return worst


def set_known_bugs(grid: dict, mismatch: bool, open_rows: bool) -> int:
    """The known-bugs grid's code: 1 when a run contradicts a documented status (a
    finding either way), else 2 when a row is open (a run said nothing) or there is no
    row, else 0."""
    grid["exit_code"] = (EXIT_ANOMALY if mismatch else
                         EXIT_INCOMPLETE if open_rows or not grid["rows"] else EXIT_OK)
    return grid["exit_code"]
