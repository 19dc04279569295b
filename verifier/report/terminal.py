"""The side-by-side table: modes as columns, counts and anomalies as rows."""

from __future__ import annotations

from verifier.judge.duplicate_window import window_lines
from verifier.judge.faults.owners import cell_text
from verifier.report.compare import load_of, rate_text, workload
from verifier.report.differences import difference_lines
from verifier.report.kinds import ABSENT, table_kinds

COUNT_ROWS = ("sent", "acknowledged", "indeterminate", "committed", "observed")
LEGEND = (
    "x = forbidden and present (fails the mode), ~ tolerated, + expected, "
    "? leaves the verdict open, - cannot occur in this mode\n"
    "exposed: what each fault acted on in the column (responses dropped or held, sends in "
    "flight, open transaction records, records of batches in flight); "
    "✗ = none, so the fault did not test it; · = does not concern it; ? = not measured; "
    "liveness = the client made no progress long after the fault (a finding, not a "
    "verdict); masked = the fault came while the client was stuck; "
    "[i0 2p 1rb] = an application's instance 0 owned 2 partitions during the fault "
    "(at its start or end) and saw 1 rebalance (rbr: since it was restarted)"
)
MARK = {"forbidden": "x", "tolerated": "~", "expected": "+", "inconclusive": "?", "n/a": "-"}


def cell(a: dict) -> str:
    """One anomaly cell: its count and, when non-zero, what the table says about it."""
    if a["expectation"] == "n/a" and not a["count"]:
        return "-"
    return f"{a['count']} {MARK[a['expectation']]}" if a["count"] else "0"


def table_rows(doc: dict) -> list[list[str]]:
    cols = doc["columns"]
    rows = [["", *[c["name"] for c in cols]]]
    for k in COUNT_ROWS:
        rows.append([k, *[str(c["counts"].get(k, 0)) for c in cols]])
        if k == "sent" and (rate := rate_row(doc)):
            rows.append(rate)
    for k in table_kinds(cols):
        rows.append([k, *[cell(c["anomalies"].get(k, ABSENT)) for c in cols]])
    rows += exposure_rows(cols)
    rows.append(["VERDICT", *[c["verdict"] for c in cols]])
    return rows


def exposure_cell(e: dict | None) -> str:
    """What one fault acted on in one column: a count, ``?`` (not measured), ``0 ✗``
    (nothing: not exercised), ``stalled ✗``; ``·`` where the fault does not concern it."""
    if e is None:
        return "·"
    if e.get("masked_by") is not None:  # tried while the client was stuck: no miss
        return f"masked by #{e['masked_by']}"
    if e.get("applied") is False:
        return "not applied ✗"
    n = "?" if e.get("acted") is None else str(e["acted"])
    if e.get("instances"):  # an application's: what each instance owned, rebalances seen
        n += f" [{cell_text(e['instances'])}]"
    if e.get("liveness"):
        return f"{n} stalled: liveness"
    if e.get("stalled") and e.get("caused_stall") is None:
        return f"{n} stalled ✗"
    return f"{n} ✗" if e.get("exercised") is False else n


def exposure_rows(cols: list[dict]) -> list[list[str]]:
    """One row per fault window: what it acted on in each column (verdict.json
    ``exposure``); none for a run without faults or recorded exposure."""
    faults: dict[int, str] = {}
    for c in cols:
        for e in (c.get("exposure") or {}).get("faults", []):
            faults.setdefault(e["id"], f"exposed: {e['fault']} #{e['id']}")
    rows = []
    for fid, label in sorted(faults.items()):
        by_col = [next((e for e in (c.get("exposure") or {}).get("faults", [])
                        if e["id"] == fid), None) for c in cols]  # fmt: skip
        rows.append([label, *[exposure_cell(e) for e in by_col]])
    return rows


def rate_row(doc: dict) -> list[str] | None:
    """Each column's achieved rate, sent records/s, against the workload's rate (None
    without the run's config.json and load phase: see :func:`compare.load_of`)."""
    work = workload(doc)
    loads = [load_of(doc, c, work) for c in doc["columns"]]
    if not any(loads):
        return None
    asked = work.get("rate")
    return [f"sent/s (of {asked:g})" if asked else "sent/s",
            *[rate_text(x["rate"]) if x else "?" for x in loads]]


def _grid(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]

    def fmt(r: list[str]) -> str:
        cells = zip(r, widths, strict=True)
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(cells))

    rule = "-" * len(fmt(rows[0]))
    return "\n".join([fmt(rows[0]), rule, *[fmt(r) for r in rows[1:-1]], rule, fmt(rows[-1])])


def render_terminal(doc: dict) -> str:
    """The run's table, its UNKNOWN reasons and crashed checks, as plain text."""
    head = f"scenario {doc['scenario']}  run {doc['run']}  sink {doc['sink']}"
    if doc.get("kafka_version"):
        head += f"  kafka {doc['kafka_version']}"
    if doc.get("clients"):
        head += f"  client {', '.join(doc['clients'])}"
    if not doc["drain"]["completed"]:
        head += "  (drain INCOMPLETE)"
    if doc.get("interrupted"):
        head += f"  (INTERRUPTED: {doc['interrupted']})"
    lines = [head, _grid(table_rows(doc)), LEGEND]
    # a reason several columns share (a generator that never started: both isolation
    # levels of its transactional column) is one line naming them all
    unknown: dict[str, list[str]] = {}
    for c in doc["columns"]:
        for r in c["reasons"]:
            unknown.setdefault(r, []).append(c["name"])
    said = set()
    missed: dict[str, list[str]] = {}
    for c in doc["columns"]:
        for r in c.get("not_exercised") or []:
            missed.setdefault(r, []).append(c["name"])
    for r, names in missed.items():
        lines.append(f"{', '.join(names)}: NOT EXERCISED because {r}")
    stuck: dict[str, list[str]] = {}
    for c in doc["columns"]:
        for r in c.get("liveness") or []:
            stuck.setdefault(r, []).append(c["name"])
    for r, names in stuck.items():
        lines.append(f"{', '.join(names)}: LIVENESS (a finding about the client, not a "
                     f"verdict): {r}")
    for c in doc["columns"]:
        if c.get("skipped"):
            lines.append(f"{c['name']}: SKIPPED because {c['skipped']}")
        for r in c["reasons"]:
            if r not in said:
                said.add(r)
                lines.append(f"{', '.join(unknown[r])}: UNKNOWN because {r}")
        if c.get("oracle"):  # the reference oracle: the differing rows themselves
            lines += difference_lines(c)
            continue
        for k in c["forbidden"]:
            s = c["anomalies"][k]["sample"][:1]
            if s:
                lines.append(f"{c['name']}: {k} e.g. {_where(s[0])}")
    lines += window_lines(doc)  # real-time mode: records written again per kill
    return "\n".join(lines)


def _where(s: dict) -> str:
    parts = [f"{s.get('topic')}[{s.get('partition')}]"]
    if s.get("offsets"):
        parts.append(f"offsets {s['offsets']}")
    elif s.get("offset") is not None:
        parts.append(f"offset {s['offset']}")
    ident = ":".join(str(s[k]) for k in ("pid", "seq") if s.get(k) is not None)
    if ident:
        parts.append(ident)
    if s.get("isolation"):
        parts.append(s["isolation"])
    return " ".join(parts)


def render_grid(grid: dict, docs: list[dict] | None = None) -> str:
    """The scenario x mode grid of :func:`verifier.judge.verdict.combine`; given the runs'
    documents, each cell also says what was observed (``PASS · 1226 dup ~``)."""
    from verifier.report.compare import CELL_LEGEND, REPEAT_LEGEND, cells, outcome_text

    detail = cells(docs) if docs else {}
    outcomes = grid.get("outcomes") or {}  # a matrix written before --repeat has none
    rows = [["scenario", *grid["columns"]]]
    for sc in grid["scenarios"]:
        rows.append([sc, *[detail.get(sc, {}).get(c, {}).get("text")
                           or (outcome_text(outcomes[sc][c]) if c in outcomes.get(sc, {})
                               else grid["grid"][sc].get(c, "")) for c in grid["columns"]]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)
    repeated = any(n > 1 for n in (grid.get("repetitions") or {}).values())
    return (text + ("\n" + CELL_LEGEND if detail else "")
            + ("\n" + REPEAT_LEGEND if repeated else ""))
