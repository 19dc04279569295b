"""What a pipeline judged by the reference oracle adds to the reports (issue 46): what
was compared, and the differing rows of each forbidden (or tolerated) kind: lines for the
terminal, a table per kind for report.html."""

from __future__ import annotations

from html import escape

import orjson

#: differing rows printed per kind (verdict.json holds the sample, report.html more)
SHOWN = 5


def _text(row) -> str:
    return orjson.dumps(row, default=str).decode() if row is not None else "none"


def comparison_line(col: dict) -> str | None:
    """What was compared with what, in one sentence (None: not the reference oracle)."""
    detail = col.get("oracle")
    if not detail:
        return None
    how = (f"final state per key {detail.get('keys')}" if detail.get("keys")
           else "multisets of rows")
    left = detail.get("varying") or []
    return (f"{col['name']}: compared with its fault-free run ({how}; "
            f"{detail['rows']['faulted']} rows against {detail['rows']['reference']}"
            + (f"; left out, differing between two fault-free runs: {left}" if left else "")
            + (f"; ignored: {detail['ignored']}" if detail.get("ignored") else "") + ")")


def _shown(col: dict):
    """(kind, count, the samples that name a row) of each difference worth showing."""
    for kind, a in col["anomalies"].items():
        if not a["count"] or a["expectation"] not in ("forbidden", "tolerated"):
            continue
        yield kind, a, [s for s in a["sample"] if "row" in s or "reference" in s]


def _copies(ev: dict) -> str:
    """How often the row was written against how often it should have been: the
    fault-free run's count for append output; once for an update of keyed output (the
    fault-free run, batched otherwise, may never have written that intermediate row)."""
    if not (ev.get("copies", 1) > 1 or "in_output" in ev):
        return ""
    written, ref = ev.get("in_output"), ev.get("in_reference")
    if ev.get("keys") and (ref or 0) <= 1:
        return f"x{ev.get('copies', 1)} (written {written} times, an update once)"
    return f"x{ev.get('copies', 1)} (written {written} times, by the fault-free run {ref})"


def _fault_free(s: dict) -> str:
    ref = s.get("reference")
    return _text(ref) if ref is not None and ref != s.get("row") else ""


def difference_lines(col: dict) -> list[str]:
    """For a column with an ``oracle`` entry: one line on the comparison, then up to
    :data:`SHOWN` rows of each forbidden (or, when it passed, tolerated) difference."""
    first = comparison_line(col)
    if first is None:
        return []
    lines = [first]
    for kind, a, samples in _shown(col):
        for s in samples[:SHOWN]:
            ev = s.get("evidence") or {}
            what = (ev.get("difference") or kind).split(":")[0]
            line = f"  {kind} ({what}): {_text(s.get('row'))}"
            if _copies(ev):
                line += " " + _copies(ev)
            if _fault_free(s):
                line += f"; fault-free: {_fault_free(s)}"
            lines.append(line)
        if a["count"] > SHOWN:
            lines.append(f"  ... {a['count'] - SHOWN} more {kind} (verdict.json)")
    return lines


def difference_table(samples: list[dict], kind: str) -> str:
    """report.html's table of a kind's differing rows (the anomaly's samples)."""
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in (
            ((s.get("evidence") or {}).get("difference") or kind).split(":")[0],
            _text(s.get("row")), _copies(s.get("evidence") or {}), _fault_free(s)))
        + "</tr>" for s in samples if "row" in s or "reference" in s)
    return ("<table class='samples'><tr><th>difference</th><th>row</th><th>copies</th>"
            f"<th>fault-free row of its key</th></tr>{rows}</table>")


__all__ = ["comparison_line", "difference_lines", "difference_table"]
