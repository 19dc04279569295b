"""The shared vocabulary of a run: delivery modes, isolation levels, sinks, anomaly kinds,
verdicts and exit codes.

Every package names these the same way; each list is defined here once.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the producer delivery presets (DESIGN §4), in report order
MODES: tuple[str, ...] = ("at-most-once", "at-least-once", "idempotent", "transactional")
#: a workload mode beside the presets: the transactional read-process-write copier
#: (producers.copier), copying the topic of the mode listed before it (formats §2.1)
COPIER = "copier"

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
ISOLATIONS: tuple[str, ...] = (READ_COMMITTED, READ_UNCOMMITTED)

#: the observer's sinks: exactly-once (idempotent by batch id) or at-least-once (naive)
SINKS: tuple[str, ...] = ("exactly-once", "at-least-once")

#: the readers whose observations a run holds: the Spark observer and the plain consumer
READERS: tuple[str, ...] = ("spark", "plain")

LOST = "lost"
UNSEEN = "unseen"
DUP_SAME = "duplicate-same-session"
DUP_CROSS = "duplicate-cross-session"
DUP_DELIVERY = "duplicate-delivery"
REORDER = "reorder"
ABORTED_READ = "aborted-read"
TORN = "torn-transaction"
HANGING = "hanging-transaction"
INCONSISTENT = "inconsistent-offset"
FOREIGN = "foreign-record"
#: a share group's record archived after its delivery-attempt limit (KIP-932): dropped
#: on purpose by the broker, never delivered again; counted apart from lost
ARCHIVED = "archived"

#: every anomaly kind, in report order (DESIGN §6)
KINDS: tuple[str, ...] = (
    LOST, UNSEEN, DUP_SAME, DUP_CROSS, DUP_DELIVERY, REORDER, ABORTED_READ, TORN,
    HANGING, INCONSISTENT, FOREIGN, ARCHIVED,
)  # fmt: skip

# ---- verdicts and exit codes: THE one table (issue 49) ----------------------------------
# `verifier chaos --help`, junit.xml, the verdict's exit code and every doc page's tables
# read these; tests/unit/test_vocabulary.py fails when a page's table drifts from them.

PASS, FAIL, UNKNOWN = "PASS", "FAIL", "UNKNOWN"
#: a fault that concerns the column did not act on it: nothing shown either way, and unlike
#: UNKNOWN the run itself is sound (DESIGN §10; decided from the column's exposure)
NOT_EXERCISED = "NOT EXERCISED"
#: the scenario's faults did not run here (set by the orchestrator, never by a check)
SKIPPED = "SKIPPED"

EXIT_OK, EXIT_ANOMALY, EXIT_INCOMPLETE, EXIT_NOT_EXERCISED = 0, 1, 2, 3
EXIT_USAGE, EXIT_INTERRUPTED = 64, 130


@dataclass(frozen=True)
class Verdict:
    """A cell's verdict: what it means, the exit code of a run whose worst it is, and the
    element its junit.xml test case gets (None: the case passes)."""

    name: str
    meaning: str
    exit_code: int
    junit: str | None


#: every verdict, best first; the worst of several wins (a cell's repeated outcomes, a
#: run's exit code)
VERDICTS: tuple[Verdict, ...] = (
    Verdict(PASS, "nothing forbidden was observed, and every fault that concerns the "
            "column acted on it", EXIT_OK, None),
    Verdict(SKIPPED, "not run here: the scenario's faults cannot run in this environment "
            "(for example broker faults on an external cluster)", EXIT_OK, "skipped"),
    Verdict(NOT_EXERCISED, "nothing forbidden, but a fault that concerns the column did "
            "not act on it (never applied, touched none of its operations, or met its load "
            "stalled): never PASS", EXIT_NOT_EXERCISED, "failure"),
    Verdict(UNKNOWN, "the run could not establish it (the drain stopped progressing, a "
            "check crashed, a process never started, a fault's start of unknown outcome, "
            "what a fault did to the column not measured); the reason is printed",
            EXIT_INCOMPLETE, "error"),
    Verdict(FAIL, "a forbidden anomaly was observed: the column broke its promise",
            EXIT_ANOMALY, "failure"),
)
VERDICT_ORDER: tuple[str, ...] = tuple(v.name for v in VERDICTS)
#: the junit.xml failure type of a NOT EXERCISED case (a forbidden anomaly's type is its kind)
JUNIT_NOT_EXERCISED = "not-exercised"

#: every exit code of `verifier chaos` (and of analyze, shrink, selftest where they apply)
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "every column kept its promise, and every fault that concerns it acted on it"),
    (EXIT_ANOMALY, "a column broke its promise: a forbidden anomaly (FAIL)"),
    (EXIT_INCOMPLETE, "incomplete: a run could not be completed or verified (UNKNOWN, an "
                      "unusable environment, every scenario SKIPPED, a self-test that did "
                      "not hold); the reason is printed"),
    (EXIT_NOT_EXERCISED, "nothing broken, but a fault missed a column (NOT EXERCISED)"),
    (EXIT_USAGE, "usage error (flags, scenario, fault spec, producer settings, pipeline), "
                 "refused before anything starts"),
    (EXIT_INTERRUPTED, "interrupted (SIGINT, SIGTERM, SIGHUP); the run folder says so"),
)
#: how several outcomes combine into one exit code
EXIT_RULE = "the worst wins: 1, then 2, then 3"


def verdict(name: str) -> Verdict:
    """The table's row for a verdict name (a KeyError for a name not in the table)."""
    for v in VERDICTS:
        if v.name == name:
            return v
    raise KeyError(name)
