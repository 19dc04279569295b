"""The connection checks of a run: what every client did with its TCP connections,
judged.

Built from the proxy's connection log (:mod:`verifier.rundata.connections`) and the
run's fault windows: per process, connections opened at start-up and later, who closed
them, idle closes, the most open at once, connections that only ever carried metadata;
per fault, the reconnects, the longest silence and the time from the heal to the first
answered request; and three checks with thresholds from the scenario's
``[connections]`` table:

- ``leak``: a process whose open connections keep growing (the low-water mark of its
  open count rises in every quarter of its life, by at least ``leak_growth``);
- ``reconnect-storm``: more than ``storm_opens_per_s`` connections opened to one broker
  within one second;
- ``no-reconnect``: a client connected when a fault started that has no answered request
  within ``reconnect_within_s`` seconds after the heal.

A finding is reported like an anomaly; it fails the run only for the checks the
scenario lists in ``fail_on``.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from verifier.rundata.connections import Connection, ConnectionLog

CHECKS = ("leak", "reconnect-storm", "no-reconnect")
DEFAULT_THRESHOLDS: dict = {"leak_growth": 10, "storm_opens_per_s": 30,
                            "reconnect_within_s": 30.0, "fail_on": []}
#: a process's connections opened this soon after its first one count as start-up
START_WINDOW_MS = 5000
#: silence before a client or broker close that makes it an idle close
IDLE_MIN_MS = 1000
#: a close is the process's exit unless it shows traffic this much later (or a new open)
EXIT_SLACK_MS = 500
#: a process counts as affected by a fault if it was active this long before it started
ACTIVE_BEFORE_MS = 10_000
#: connections drawn in the lane chart (the section keeps this many rows)
MAX_LANE_ROWS = 3000


def thresholds(spec: dict | None) -> dict:
    """The scenario's ``[connections]`` table over the defaults; ValueError names a bad key."""
    spec = dict(spec or {})
    unknown = set(spec) - set(DEFAULT_THRESHOLDS)
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} (allowed: {sorted(DEFAULT_THRESHOLDS)})")
    out = {**DEFAULT_THRESHOLDS, **spec}
    bad = [c for c in out["fail_on"] if c not in CHECKS]
    if bad:
        raise ValueError(f"fail_on: unknown checks {bad} (known: {list(CHECKS)})")
    for key in ("leak_growth", "storm_opens_per_s", "reconnect_within_s"):
        if not isinstance(out[key], int | float) or out[key] <= 0:
            raise ValueError(f"{key} must be a positive number")
    return out


def _end(c: Connection, log_end: int) -> int:
    return c.closed if c.closed is not None else log_end


def _open_counts(conns: list[Connection], log_end: int) -> list[tuple[int, int]]:
    """(time, connections open just after it) at every open and close."""
    events = sorted([(c.opened, 1) for c in conns]
                    + [(_end(c, log_end), -1) for c in conns if c.closed is not None])
    n, out = 0, []
    for t, d in events:
        n += d
        out.append((t, n))
    return out


def _max_open(conns: list[Connection], log_end: int) -> int:
    return max((n for _, n in _open_counts(conns, log_end)), default=0)


def idle_closes(conns: list[Connection], log_end: int) -> list[tuple[Connection, int]]:
    """(connection, silence before its close in ms) for closes by the client or the broker
    after a silence while the process went on: another of its connections opened after
    the close or carried traffic well after it (not the closes of its exit)."""
    out = []
    for c in conns:
        if c.closed is None or c.by not in ("client", "broker") or c.last_t is None:
            continue
        quiet = c.closed - c.last_t
        went_on = any(o is not c and (o.opened > c.closed
                                      or (o.last_t or 0) > c.closed + EXIT_SLACK_MS)
                      for o in conns)
        if quiet >= IDLE_MIN_MS and went_on:
            out.append((c, quiet))
    return out


def by_process(conns: list[Connection]) -> dict[str, list[Connection]]:
    out: dict[str, list[Connection]] = defaultdict(list)
    for c in conns:
        out[c.process].append(c)
    return dict(sorted(out.items()))


def process_summary(conns: list[Connection], log_end: int) -> dict:
    first = min(c.opened for c in conns)
    idle = idle_closes(conns, log_end)
    purposes = Counter(c.purpose for c in conns)
    return {
        "opened": len(conns),
        "at_start": sum(1 for c in conns if c.opened - first <= START_WINDOW_MS),
        "later": sum(1 for c in conns if c.opened - first > START_WINDOW_MS),
        "closed_by": dict(Counter(c.by or "still open" for c in conns)),
        "idle_closes": len(idle),
        "idle_before_close_ms": int(statistics.median(q for _, q in idle)) if idle else None,
        "max_open": _max_open(conns, log_end),
        "metadata_only": sum(1 for c in conns if c.metadata_only),
        "never_requested": sum(1 for c in conns if not c.requests),
        "purposes": dict(sorted(purposes.items())),
        "brokers": sorted({c.broker for c in conns}),
        "requests": sum(c.requests for c in conns),
        "bytes_out": sum(c.bytes[0] for c in conns),
        "bytes_in": sum(c.bytes[1] for c in conns),
    }


# ----- checks ---------------------------------------------------------------------------

def check_leak(conns: list[Connection], log_end: int, growth: int) -> list[dict]:
    """Processes whose low-water mark of open connections rises in each quarter of their
    life by ``growth`` or more in all."""
    out = []
    for proc, cs in by_process(conns).items():
        series = _open_counts(cs, log_end)
        t0, t1 = series[0][0], max(series[-1][0], log_end)
        if t1 - t0 < 4000:
            continue
        lows, n, i = [], 0, 0
        for q in range(4):
            start, stop = t0 + (t1 - t0) * q / 4, t0 + (t1 - t0) * (q + 1) / 4
            low = None
            while i < len(series) and series[i][0] < start:
                n = series[i][1]
                i += 1
            low = n
            while i < len(series) and series[i][0] < stop:
                n = series[i][1]
                low = min(low, n)
                i += 1
            lows.append(low)
        rising = all(b >= a for a, b in zip(lows, lows[1:], strict=False))
        if rising and lows[-1] - lows[0] >= growth:
            out.append({"check": "leak", "subject": proc, "t": t1,
                        "detail": f"open connections never fell back: low-water mark per "
                                  f"quarter {lows}, {sum(1 for c in cs if c.closed is None)} "
                                  f"still open at the end"})
    return out


def check_storm(conns: list[Connection], per_s: float) -> list[dict]:
    """Brokers that saw more than ``per_s`` connection opens within one second."""
    buckets: dict[int, Counter] = defaultdict(Counter)
    who: dict[tuple[int, int], Counter] = defaultdict(Counter)
    for c in conns:
        buckets[c.broker][c.opened // 1000] += 1
        who[(c.broker, c.opened // 1000)][c.process] += 1
    out = []
    for broker, counts in sorted(buckets.items()):
        sec, n = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))
        if n > per_s:
            top = ", ".join(f"{p} {k}" for p, k in who[(broker, sec)].most_common(3))
            out.append({"check": "reconnect-storm", "subject": f"broker {broker}",
                        "t": sec * 1000, "detail": f"{n} opens within one second ({top}); "
                        f"{sum(1 for v in counts.values() if v > per_s)} such seconds"})
    return out


def fault_recovery(conns: list[Connection], faults: list[dict], log_end: int,
                   within_s: float) -> tuple[list[dict], list[dict]]:
    """Per fault: reconnects and time to the first answered request after the heal, for
    each process connected and active when it started; plus the no-reconnect findings."""
    procs = by_process(conns)
    rows, findings = [], []
    for w in faults:
        start, heal = w.get("start"), w.get("end")
        if start is None:
            continue
        entry = {"fault": w.get("fault"), "id": w.get("id"), "target": w.get("target"),
                 "start": start, "end": heal, "processes": {}}
        for proc, cs in procs.items():
            connected = [c for c in cs if c.opened <= start < _end(c, log_end)]
            if not connected or not any(_active_in(c, start - ACTIVE_BEFORE_MS, start)
                                        for c in cs):
                continue
            after = heal if heal is not None else start
            reopened = sum(1 for c in cs if start <= c.opened <= after + within_s * 1000)
            firsts = [t for c in cs if (t := c.answered_after(after)) is not None]
            first = min(firsts) if firsts else None
            rec = {"reconnects": reopened,
                   "closed_in_fault": sum(1 for c in connected
                                          if c.closed is not None and c.closed <= after),
                   "recovery_s": None if first is None else round((first - after) / 1000, 2),
                   "silence_s": longest_silence(cs, start, after + within_s * 1000)}
            entry["processes"][proc] = rec
            late = first is None or first - after > within_s * 1000
            if heal is not None and late and log_end >= heal + within_s * 1000:
                findings.append({
                    "check": "no-reconnect", "subject": proc, "t": heal,
                    "detail": f"no answered request within {within_s:g} s after the heal "
                              f"of {w.get('fault')} (id {w.get('id')})"
                              + ("" if first is None
                                 else f": the first came {rec['recovery_s']} s after")})
        rows.append(entry)
    return rows, findings


def longest_silence(conns: list[Connection], t0: int, t1: int) -> float | None:
    """The longest time within ``[t0, t1]`` in which none of a process's connections had
    an answered request (bursts closer than a second are one): how long a fault stalled
    it, whether or not it needed a new connection. Up to its last answer only (a process
    that ends or never answers again has its tail judged by the no-reconnect check);
    None without an answer since ``t0`` or without activity bursts (a version 1 log)."""
    spans = sorted((s, e) for c in conns for s, e in c.activity)
    if not spans or max(e for _, e in spans) < t0:  # no answer at all since t0
        return None
    t1 = min(t1, max(e for _, e in spans))
    longest, covered = 0, t0
    for s, e in spans:
        if e < covered:
            continue
        if s > t1:
            break
        longest = max(longest, min(s, t1) - covered)
        covered = max(covered, e)
    return round(max(longest, 0) / 1000, 1)


def _active_in(c: Connection, t0: int, t1: int) -> bool:
    if c.activity:
        return any(s <= t1 and e >= t0 for s, e in c.activity)
    # a version 1 log has no activity: an open connection that carried requests counts
    return c.requests > 0 and c.opened <= t1 and (c.closed is None or c.closed >= t0)


def summarize(log: ConnectionLog, faults: list[dict], limits: dict | None = None) -> dict:
    """The ``connections`` section of verdict.json."""
    limits = thresholds(limits)
    conns = log.connections
    if not conns:
        return {"available": True, "version": log.version, "thresholds": limits, "total": 0,
                "processes": {}, "faults": [], "findings": [], "failed": False, "lanes": [],
                "closes_without_open": log.closes_without_open}
    end = log.end or max(_end(c, 0) for c in conns)
    recovery, no_reconnect = fault_recovery(conns, faults, end, limits["reconnect_within_s"])
    findings = (check_leak(conns, end, limits["leak_growth"])
                + check_storm(conns, limits["storm_opens_per_s"]) + no_reconnect)
    for f in findings:
        f["expectation"] = "forbidden" if f["check"] in limits["fail_on"] else "reported"
    lanes = [[c.process, c.broker, c.opened, c.closed, c.by, c.purpose,
              [list(a) for a in c.activity], c.requests] for c in conns[:MAX_LANE_ROWS]]
    return {
        "available": True, "version": log.version, "thresholds": limits,
        "total": len(conns), "t0": conns[0].opened, "t1": end,
        "max_open": _max_open(conns, end),
        "processes": {p: process_summary(cs, end) for p, cs in by_process(conns).items()},
        "faults": recovery, "findings": findings,
        "failed": any(f["expectation"] == "forbidden" for f in findings),
        "closes_without_open": log.closes_without_open,
        "lanes": lanes, "lanes_truncated": max(0, len(conns) - MAX_LANE_ROWS),
    }


def unavailable(reason: str) -> dict:
    """The section of a run whose connections could not be judged, and why."""
    return {"available": False, "reason": reason}
