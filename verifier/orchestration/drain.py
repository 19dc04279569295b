"""The drain phase (DESIGN §2): wait until the log is stable and the observer has read it.

Two conditions, one deadline:

1. **stable**: every partition's read_committed end offset (the LSO) equals its
   read_uncommitted end offset (the high watermark). Until then an open transaction
   holds read_committed readers back; the partitions named are where it is open.
2. **observed**: each observer query's *position* (streaming.progress: the end offset of
   the last batch its sink completely wrote, position semantics, last + 1) has reached
   those end offsets. Position, not "highest offset written": when a partition ends in
   transaction markers or aborted records, the highest offset written stays below the end
   for ever, but the batch that covered them still moves the position past them.

The result is what ``RUN/drain.json`` holds. On the deadline a :class:`DrainIncomplete`
(a :class:`~verifier.rundata.errors.WaitTimeout`) carries the same result, with the partitions
still behind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from streaming.progress import Offsets, read_progress
from verifier.harness.topics import end_offsets
from verifier.rundata.errors import WaitTimeout
from verifier.rundata.formats import header, read_json, write_json_atomic
from verifier.rundata.layout import layout
from verifier.rundata.vocab import ISOLATIONS as ISOLATION_LEVELS
from verifier.rundata.waiting import wait_until

DRAIN_FORMAT = "drain"


@dataclass
class DrainResult:
    """Outcome of a drain; ``behind`` lists what blocked it (empty when completed)."""

    completed: bool
    phase: str  # the condition reached last: "started", "stable" or "observed"
    deadline_s: float
    elapsed_s: float = 0.0
    #: {isolation: {(topic, partition): end offset}} from the last look at the brokers
    end_offsets: dict[str, Offsets] = field(default_factory=dict)
    #: {isolation: {(topic, partition): observer position}} from the progress files
    positions: dict[str, Offsets] = field(default_factory=dict)
    behind: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        def nest(offsets: Offsets) -> dict:
            return {f"{t}-{p}": o for (t, p), o in sorted(offsets.items())}

        return {
            **header(DRAIN_FORMAT),
            "completed": self.completed, "phase": self.phase,
            "deadline_s": self.deadline_s, "elapsed_s": round(self.elapsed_s, 3),
            "end_offsets": {iso: nest(o) for iso, o in self.end_offsets.items()},
            "observer_positions": {iso: nest(o) for iso, o in self.positions.items()},
            "behind": self.behind,
        }  # fmt: skip


class DrainIncomplete(WaitTimeout):
    """The drain's deadline passed; ``details["drain"]`` is the :class:`DrainResult`."""

    @property
    def result(self) -> DrainResult:
        return self.details["drain"]


def drain(bootstrap_servers: str, topics: list[str], run_dir: Path, timeout: float,
          isolation_levels: tuple[str, ...] = ISOLATION_LEVELS,
          **client_config) -> DrainResult:
    """Wait for both drain conditions within ``timeout`` seconds; see the module doc."""
    started = time.monotonic()
    result = DrainResult(completed=False, phase="started", deadline_s=timeout)

    def remaining() -> float:
        return max(0.0, timeout - (time.monotonic() - started))

    def stable() -> tuple[bool, list[dict]]:
        result.end_offsets = {iso: end_offsets(bootstrap_servers, topics, iso, **client_config)
                              for iso in ISOLATION_LEVELS}
        result.behind = _open_transactions(result.end_offsets)
        return not result.behind, result.behind

    def observed() -> tuple[bool, list[dict]]:
        result.positions = {iso: _position(run_dir, iso) for iso in isolation_levels}
        target = result.end_offsets["read_uncommitted"]
        result.behind = [
            {"topic": t, "partition": p, "isolation": iso, "reason": "observer behind",
             "observer_position": result.positions[iso].get((t, p), 0), "end_offset": end}
            for iso in isolation_levels for (t, p), end in sorted(target.items())
            if result.positions[iso].get((t, p), 0) < end
        ]
        return not result.behind, result.behind

    # (name, probe, condition, longest pause between probes): "observed" reads local
    # progress files, cheap enough to look twice a second (the pause is the drain's slack)
    steps = (
        ("stable", stable, "read_committed end offset == read_uncommitted end offset "
                           "for every partition", 2.0),
        ("observed", observed, "every observer query's position >= the end offset "
                               "of every partition", 0.5),
    )
    for phase, probe, expected, pause in steps:
        try:
            wait_until(probe, timeout=remaining(), what=f"the drain ({phase})",
                       expected=expected, describe=_describe, max_interval=pause)
        except WaitTimeout as exc:
            result.elapsed_s = time.monotonic() - started
            raise DrainIncomplete(what=exc.what, expected=exc.expected, observed=exc.observed,
                                  seconds=timeout, details={"drain": result}) from None
        result.phase = phase
    result.completed = True
    result.elapsed_s = time.monotonic() - started
    return result


def drain_to_file(bootstrap_servers: str, topics: list[str], run_dir: Path, timeout: float,
                  **kwargs) -> DrainResult:
    """:func:`drain`, writing ``RUN/drain.json`` whether it completes or not."""
    try:
        result = drain(bootstrap_servers, topics, run_dir, timeout, **kwargs)
    except DrainIncomplete as exc:
        write_drain(run_dir, exc.result)
        raise
    write_drain(run_dir, result)
    return result


def write_drain(run_dir: Path, result: DrainResult) -> Path:
    return write_json_atomic(layout(run_dir).drain, result.to_json())


def read_drain(run_dir: Path) -> dict:
    return read_json(layout(run_dir).drain, DRAIN_FORMAT)


def _open_transactions(ends: dict[str, Offsets]) -> list[dict]:
    committed, uncommitted = ends["read_committed"], ends["read_uncommitted"]
    return [
        {"topic": t, "partition": p, "reason": "open transaction (LSO < high watermark)",
         "read_committed_end": committed.get((t, p)), "read_uncommitted_end": hw}
        for (t, p), hw in sorted(uncommitted.items()) if committed.get((t, p)) != hw
    ]


def _position(run_dir: Path, isolation: str) -> Offsets:
    progress = read_progress(run_dir, isolation)
    return dict(progress.position) if progress else {}


def _describe(behind: list[dict]) -> str:
    """Name the partitions still behind (capped: a big run can have hundreds)."""
    parts = []
    for b in behind[:20]:
        where = f"{b['topic']}-{b['partition']}"
        if "isolation" in b:
            parts.append(f"{where} {b['isolation']} at {b['observer_position']}"
                         f"/{b['end_offset']}")
        else:
            parts.append(f"{where} LSO {b['read_committed_end']} < HW "
                         f"{b['read_uncommitted_end']}")
    more = f" and {len(behind) - 20} more" if len(behind) > 20 else ""
    return f"{len(behind)} partition(s) behind: " + ", ".join(parts) + more
