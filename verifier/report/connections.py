"""The connection report of a run on the terminal and in report.html: the
``connections`` section of verdict.json (built and judged by
:mod:`verifier.judge.connections`) as a summary table, per-fault rows and a lane chart
of every connection."""

from __future__ import annotations

from collections import defaultdict
from html import escape


def _closed_by(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items()))


def render_connections(section: dict | None) -> str:
    """The terminal summary of a ``connections`` section."""
    if not section:
        return "connections: no connection report in this verdict"
    if not section.get("available"):
        return f"connections: not reported ({section.get('reason')})"
    procs = section["processes"]
    tot = {k: sum(p[k] for p in procs.values())
           for k in ("opened", "at_start", "later", "idle_closes", "metadata_only")}
    lines = [f"connections: {tot['opened']} opened ({tot['at_start']} at start-up, "
             f"{tot['later']} later), at most {section.get('max_open', 0)} open at once, "
             f"{tot['idle_closes']} idle closes, {tot['metadata_only']} metadata-only"]
    rows = [["process", "opened", "start", "later", "max open", "idle closes", "closed by",
             "purposes"]]
    for name, p in procs.items():
        idle = str(p["idle_closes"])
        if p["idle_before_close_ms"] is not None:
            idle += f" (~{p['idle_before_close_ms'] / 1000:.1f} s quiet)"
        rows.append([name, str(p["opened"]), str(p["at_start"]), str(p["later"]),
                     str(p["max_open"]), idle, _closed_by(p["closed_by"]),
                     ", ".join(f"{k} {v}" for k, v in p["purposes"].items())])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  " + "  ".join(v.ljust(w) if i in (0, 6, 7) else v.rjust(w)
                                      for i, (v, w) in enumerate(zip(r, widths, strict=True)))
                     .rstrip())
    lines += _fault_lines(section)
    lim = section["thresholds"]
    if section["findings"]:
        for f in section["findings"]:
            mark = "x" if f["expectation"] == "forbidden" else "~"
            lines.append(f"  {mark} {f['check']} {f['subject']}: {f['detail']}")
    else:
        lines.append(f"  checks: no leak (growth >= {lim['leak_growth']}), no reconnect storm "
                     f"(> {lim['storm_opens_per_s']} opens/s to a broker), every client "
                     f"answered within {lim['reconnect_within_s']:g} s of each heal")
    return "\n".join(lines)


def _fault_lines(section: dict) -> list[str]:
    """Per fault, a row per process connected when it began: connections it lost and
    re-opened, the longest time without an answer, the first answer after the heal."""
    t0, lines = section.get("t0") or 0, []
    for f in section["faults"]:
        when = f"{(f['start'] - t0) / 1000:.1f} s"
        when += f" .. {(f['end'] - t0) / 1000:.1f} s" if f["end"] is not None else " (not healed)"
        head = f"  fault {f['fault']} ({when})"
        if not f["processes"]:
            lines.append(f"{head}: no client was connected")
            continue
        rows = [[head, "lost", "reopened", "longest silence", "first answer after heal"]]
        for proc, r in f["processes"].items():
            silence = r.get("silence_s")
            rows.append([f"    {proc}", str(r["closed_in_fault"]), str(r["reconnects"]),
                         "-" if silence is None else f"{silence:.1f} s",
                         "none" if r["recovery_s"] is None else f"{r['recovery_s']:.1f} s"])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines += ["  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                            for i, (v, w) in enumerate(zip(r, widths, strict=True)))
                  for r in rows]
    return lines


PURPOSE_COLORS = {"produce": "#1f77b4", "fetch": "#2ca02c", "coordinator": "#9467bd",
                  "find-coordinator": "#c5b0d5", "list-offsets": "#17becf",
                  "admin": "#8c564b", "metadata": "#aaaaaa", "none": "#dddddd"}
CLOSE_COLORS = {"client": "#555555", "broker": "#d62728", "fault": "#ff7f0e",
                "proxy": "#7b4fa0"}
_LW, _W, _ROW, _GAP = 230, 1100, 7, 6


def _color(purpose: str) -> str:
    return PURPOSE_COLORS.get(purpose.split("+")[0], "#444444")


def lanes_svg(section: dict | None, faults: list[dict]) -> str:
    """One lane per (process, broker); a bar per connection from open to close (colour:
    its purpose; darker: bursts of answered traffic; end tick: who closed it), fault
    windows behind."""
    if not section or not section.get("available") or not section.get("lanes"):
        return "<p>No connection log in this run.</p>"
    rows = section["lanes"]
    t0, t1 = section["t0"], max(section["t1"], section["t0"] + 1000)
    times = [t for w in faults for t in (w.get("start"), w.get("end")) if t is not None]
    t0, t1 = min([t0, *times]), max([t1, *times])

    def x(t: float) -> float:
        return _LW + (t - t0) / max(t1 - t0, 1) * (_W - _LW - 20)

    lanes: dict[tuple[str, int], list[list]] = defaultdict(list)
    for r in rows:
        lanes[(r[0], r[1])].append(r)
    body, y = [], 24
    for (proc, broker), conns in sorted(lanes.items()):
        ends: list[int] = []  # greedy packing: the end time of each sub-row
        placed = []
        for r in sorted(conns, key=lambda r: r[2]):
            end = r[3] if r[3] is not None else t1
            row = next((i for i, e in enumerate(ends) if e <= r[2]), None)
            if row is None:
                ends.append(end)
                row = len(ends) - 1
            else:
                ends[row] = end
            placed.append((row, r, end))
        height = max(len(ends), 1) * _ROW + _GAP
        body.append(f'<text x="4" y="{y + min(height, 14) - 4}" font-size="11">'
                    f'{escape(proc)} → b{broker}</text>'
                    f'<line x1="{_LW}" x2="{_W - 20}" y1="{y + height - 2}" y2="{y + height - 2}" '
                    'stroke="#eee"/>')
        for row, r, end in placed:
            _, _, opened, closed, by, purpose, activity, requests = r
            yy = y + row * _ROW
            x0, x1 = x(opened), x(end)
            tip = (f"{proc} → broker {broker}: {purpose}, {requests} requests, open "
                   f"{(opened - t0) / 1000:.1f} s, "
                   + (f"closed {(closed - t0) / 1000:.1f} s by {by}" if closed else "still open"))
            body.append(f'<rect x="{x0:.1f}" y="{yy}" width="{max(x1 - x0, 1.5):.1f}" '
                        f'height="{_ROW - 2}" fill="{_color(purpose)}" opacity="0.45">'
                        f"<title>{escape(tip)}</title></rect>")
            for s, e in activity:
                body.append(f'<rect x="{x(s):.1f}" y="{yy}" width="{max(x(e) - x(s), 1.5):.1f}" '
                            f'height="{_ROW - 2}" fill="{_color(purpose)}"/>')
            if closed is not None:
                body.append(f'<rect x="{x1 - 1:.1f}" y="{yy - 1}" width="2" height="{_ROW}" '
                            f'fill="{CLOSE_COLORS.get(by or "", "#000")}"/>')
        y += height
    h = y + 40
    back = [f'<rect x="{_LW}" y="20" width="{_W - _LW - 20}" height="{y - 18}" '
            'fill="#fafafa" stroke="#ccc"/>']
    for w in faults:
        if w.get("start") is None:
            continue
        x0, x1 = x(w["start"]), x(w["end"] if w.get("end") is not None else t1)
        back.append(f'<rect x="{x0:.1f}" y="20" width="{max(x1 - x0, 2):.1f}" height="{y - 18}" '
                    f'fill="#ffb347" opacity="0.35"><title>{escape(str(w.get("fault")))}'
                    f'</title></rect><text x="{x0 + 2:.1f}" y="14" font-size="11">'
                    f'{escape(str(w.get("fault")))}</text>')
    legend = "  ".join(f'<tspan fill="{c}">■ {k}</tspan>' for k, c in PURPOSE_COLORS.items())
    closes = "  ".join(f'<tspan fill="{c}">▮ {k}</tspan>' for k, c in CLOSE_COLORS.items())
    foot = (f'<text x="{_LW}" y="{y + 16}" font-size="11">0 s</text>'
            f'<text x="{_W - 60}" y="{y + 16}" font-size="11">{(t1 - t0) / 1000:.0f} s</text>'
            f'<text x="4" y="{y + 16}" font-size="11">purpose: </text>'
            f'<text x="{_LW + 40}" y="{y + 16}" font-size="11">{legend}</text>'
            f'<text x="{_LW + 40}" y="{y + 32}" font-size="11">closed by: {closes}; pale bar = '
            f"open, solid = answered traffic, orange band = fault</text>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{h}" class="plot">'
            + "".join(back) + "".join(body) + foot + "</svg>")
