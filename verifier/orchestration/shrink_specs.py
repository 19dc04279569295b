"""Shrink's candidates are plain scenario specs (``Scenario.to_json()`` dicts): the edits
that make one (fewer faults, halved durations, earlier starts) and the words that name
one in the progress lines and the report."""

from __future__ import annotations

import copy


def with_faults(spec: dict, faults: list[dict]) -> dict:
    """A copy of ``spec`` with ``faults`` (copied) as its fault list."""
    out = copy.deepcopy(spec)
    out["faults"] = copy.deepcopy(list(faults))
    return out


def split(items: list, n: int) -> list[list]:
    """``items`` in ``n`` contiguous chunks of near-equal size."""
    size, extra = divmod(len(items), n)
    out, i = [], 0
    for k in range(n):
        j = i + size + (1 if k < extra else 0)
        if j > i:
            out.append(items[i:j])
        i = j
    return out


def fault_name(fault: dict) -> str:
    """A fault as the progress lines name it: ``kind[target]``."""
    target = fault.get("target") or {}
    what = ",".join(f"{k}={v}" if not isinstance(v, dict) else k for k, v in target.items())
    return f"{fault.get('kind', '?')}" + (f"[{what}]" if what else "")


def names(faults: list[dict]) -> str:
    """Several faults by :func:`fault_name`, comma-separated."""
    return ", ".join(fault_name(f) for f in faults)


def lowest(value) -> float:
    """A time or the low end of a ``[low, high]`` range."""
    return float(min(value)) if isinstance(value, list) else float(value)


def highest(value) -> float:
    """A time or the high end of a ``[low, high]`` range."""
    return float(max(value)) if isinstance(value, list) else float(value)


def scale(value, k: float):
    """A time (or both ends of a range) times ``k``, to the millisecond."""
    if isinstance(value, list):
        return [round(float(v) * k, 3) for v in value]
    return round(float(value) * k, 3)


def halve(value, minimum: float):
    """Half of a duration (a [low, high] range halved at both ends), or None when the
    result would fall below ``minimum``."""
    if value is None or lowest(value) / 2 < minimum:
        return None
    return scale(value, 0.5)


def fmt(value) -> str:
    """A time or a range, shortest form (``4``, ``[2, 2.5]``)."""
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return f"{float(value):g}"


def describe(spec: dict) -> str:
    """A schedule's size in one phrase: faults, load, rate, partitions, modes."""
    w = spec["workload"]
    return (f"{count(len(spec.get('faults') or []), 'fault')}, {fmt(w['duration_s'])} s at "
            f"{fmt(w['rate'])}/s, {count(w['partitions'], 'partition')}, "
            f"{count(len(w['modes']), 'mode')}")


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one (\"1 fault\", \"3 modes\")."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
