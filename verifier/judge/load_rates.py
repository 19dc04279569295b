"""A column's load inside and outside its fault windows (the exposure's stall rule,
verifier.judge.exposure): sends per second outside every window and inside each, and
whether the column was sending when a fault started. Pure."""

from __future__ import annotations

import bisect

#: a stalled load: below this share of the column's own rate outside the fault windows
STALL_RATIO = 0.1
#: a column "was sending when the fault started" if its last send before the start is at
#: most this many of its own mean intervals old (and at least ACTIVE_MIN_S): a generator
#: blocked by the fault (a commit waiting on a paused broker) was exercised by it; one
#: stopped before it (SIGSTOP, a client looping on an error) was not
ACTIVE_INTERVALS = 3.0
ACTIVE_MIN_S = 1.0


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _count_between(invoked: list[int], s: int, e: int) -> int:
    return bisect.bisect_right(invoked, e) - bisect.bisect_left(invoked, s)


def load_rates(invoked: list[int], wins: list[tuple[int, int]]) -> tuple[float | None, dict]:
    """The column's sends per second outside every window (over its own span of load),
    and inside each window (keyed by (start, end))."""
    if not invoked:
        return None, {w: 0.0 for w in wins}
    first, last = invoked[0], invoked[-1]
    merged = _merged([(max(s, first), min(e, last)) for s, e in wins if e > first and s < last])
    inside_n = sum(_count_between(invoked, s, e) for s, e in merged)
    inside_ms = sum(e - s for s, e in merged)
    out_ms = max(0, (last - first) - inside_ms)
    rate_out = (len(invoked) - inside_n) / (out_ms / 1000) if out_ms >= 1000 else None
    rates = {(s, e): _count_between(invoked, s, e) / max((e - s) / 1000, 0.001)
             for s, e in wins}
    return rate_out, rates


def active_at(invoked: list[int], t: int, rate_out: float | None) -> bool:
    i = bisect.bisect_right(invoked, t)
    if i == 0:
        return False
    gap_ms = max(ACTIVE_MIN_S, ACTIVE_INTERVALS / rate_out if rate_out else ACTIVE_MIN_S) * 1000
    return t - invoked[i - 1] <= gap_ms
