"""The lines a pipeline judged by the reference oracle adds to the terminal report
(issue 46): what was compared, and the differing rows of each forbidden kind."""

from __future__ import annotations

import orjson

#: differing rows printed per kind (verdict.json holds the sample, report.html more)
SHOWN = 5


def _text(row) -> str:
    return orjson.dumps(row, default=str).decode() if row is not None else "none"


def difference_lines(col: dict) -> list[str]:
    """For a column with an ``oracle`` entry: one line on the comparison, then up to
    :data:`SHOWN` rows of each forbidden (or, when it passed, tolerated) difference."""
    detail = col.get("oracle")
    if not detail:
        return []
    name = col["name"]
    how = (f"final state per key {detail.get('keys')}" if detail.get("keys")
           else "multisets of rows")
    left = detail.get("varying") or []
    lines = [f"{name}: compared with its fault-free run ({how}; {detail['rows']['faulted']} "
             f"rows against {detail['rows']['reference']}"
             + (f"; left out, differing between two fault-free runs: {left}" if left else "")
             + (f"; ignored: {detail['ignored']}" if detail.get("ignored") else "") + ")"]
    for kind, a in col["anomalies"].items():
        if not a["count"] or a["expectation"] not in ("forbidden", "tolerated"):
            continue
        for s in a["sample"][:SHOWN]:
            if "row" not in s and "reference" not in s:
                continue
            ev = s.get("evidence") or {}
            what = (ev.get("difference") or kind).split(":")[0]
            line = f"  {kind} ({what}): {_text(s.get('row'))}"
            if ev.get("copies", 1) > 1 or "in_output" in ev:
                line += (f" x{ev.get('copies', 1)} (output {ev.get('in_output')}, fault-free "
                         f"{ev.get('in_reference')})")
            if s.get("reference") is not None and s.get("reference") != s.get("row"):
                line += f"; fault-free: {_text(s['reference'])}"
            lines.append(line)
        if a["count"] > SHOWN:
            lines.append(f"  ... {a['count'] - SHOWN} more {kind} (verdict.json)")
    return lines


__all__ = ["difference_lines"]
