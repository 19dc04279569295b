"""The rules on one record, one identity or one transaction, as plain functions: what
makes a duplicate, a reorder, a redelivery, a record away from home, a torn or hanging
transaction, an inconsistent offset, a foreign record.

The per-partition pass (:mod:`kinds`) applies them to whole partitions after the drain;
the live checks (:mod:`stream`, :mod:`stream_rest`) apply the same functions to each
micro-batch as it arrives, with state bounded by ranges of sequences. One definition,
both paths (docs/expectations.md §1).
"""

from __future__ import annotations

from verifier.judge.model import DUP_CROSS, DUP_SAME


def duplicate_kinds(copies: int, sessions: int) -> list[str]:
    """duplicate-same-session when some session wrote the identity twice (more copies
    than sessions), duplicate-cross-session when two or more sessions wrote it."""
    out = []
    if copies > sessions:
        out.append(DUP_SAME)
    if sessions >= 2:
        out.append(DUP_CROSS)
    return out


def reordered(seq: int | None, higher_seq: int | None) -> bool:
    """reorder: a first copy whose sequence is below the highest sequence among the first
    copies of its session at lower offsets (``higher_seq``; None: there is none)."""
    return seq is not None and higher_seq is not None and seq < higher_seq


def redelivered(deliveries: int) -> bool:
    """duplicate-delivery: one reader delivered one (partition, offset) more than once
    (:func:`kinds.delivery_and_inconsistent` applies it as the column filter ``n > 1``)."""
    return deliveries > 1


def is_home(pid: str | None, p: int | None, topic: str, partition: int,
            topics: dict[str, str]) -> bool:
    """A decoded record belongs where it was read: its producer's topic and its ``p``
    (the row-at-a-time twin of :func:`verifier.judge.definitions.frames.at_home`)."""
    return pid is not None and topics.get(pid) == topic and p == partition


# -- the kinds decided outside the per-partition pass ------------------------------
# The batch checks compute these with Spark (verifier.judge.checks.txn and .log) on
# the same rules; a live path, which holds plain rows, calls these.


def torn(records: int, visible: int) -> bool:
    """torn-transaction: a reader saw some, not all, of a committed transaction's
    ``records`` (:func:`verifier.judge.checks.history.txn_sizes`); ``visible`` = the
    distinct records it saw, summed over partitions (``txn_visible``). Seeing none is
    lost, not torn."""
    return 0 < visible < records


def hanging(end_read_committed: int, end_read_uncommitted: int) -> bool:
    """hanging-transaction: at drain, the partition's LSO below its high watermark."""
    return end_read_committed < end_read_uncommitted


def inconsistent(one: tuple | None, other: tuple | None) -> bool:
    """inconsistent-offset for two deliveries of one (partition, offset): the decoded
    identities (:data:`~verifier.judge.definitions.frames.IDENT_FIELDS`, None for a row that
    did not decode) differ, or one decoded and the other did not (the row-at-a-time twin
    of the ``differ`` / ``fany`` cells of :func:`kinds.delivery_and_inconsistent`)."""
    return one != other


def undecodable(row: dict, run: str, pids) -> str | None:
    """foreign-record for a row that does not decode, names another run or an unknown
    producer: the reason, else None (decoded identities are judged by
    :func:`kinds.misplaced`)."""
    if row.get("foreign"):
        return row.get("error") or "undecodable"
    if row.get("run") != run:
        return f"another run: {row.get('run')!r}"
    if row.get("pid") is None or row.get("pid") not in pids:
        return "run or producer unknown to this run"
    return None
