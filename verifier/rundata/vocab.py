"""The shared vocabulary of a run: delivery modes, isolation levels, sinks, anomaly kinds.

Every package names these the same way; each list is defined here once.
"""

from __future__ import annotations

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

#: every anomaly kind, in report order (DESIGN §6)
KINDS: tuple[str, ...] = (
    LOST, UNSEEN, DUP_SAME, DUP_CROSS, DUP_DELIVERY, REORDER, ABORTED_READ, TORN,
    HANGING, INCONSISTENT, FOREIGN,
)  # fmt: skip
