"""Inline SVG plots, generated as text: no scripts, fonts or network resources."""

from __future__ import annotations

import math
from html import escape

PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
W, H, PAD = 1100, 260, 40


#: the timeline's plot area inside its SVG: left margin for the y axis, a lane above
#: for each row of fault labels, the x axis and the legend below (never over the data)
ML, MR, PH, CHAR_W = 78, 20, 200, 6.6
FAULT_FILL, ANOMALY_FILL = "#ffb347", "#d62728"


def _step(span: float, ticks: int = 8) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks."""
    raw = max(span, 1e-9) / ticks
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def _lanes(spans: list[tuple[float, float]]) -> list[int]:
    """A row for each label (x, width) so that labels in one row do not overlap."""
    ends: list[float] = []
    out = []
    for x, w in spans:
        row = next((i for i, e in enumerate(ends) if e + 6 <= x), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = x + w
        out.append(row)
    return out


def _series_labels(doc: dict, thr: dict) -> dict[str, str]:
    """A series (a mode, or a producer) named by the columns it feeds when they differ."""
    cols: dict[str, list[str]] = {}
    for c in doc.get("columns", []):
        cols.setdefault(str(c.get("mode")), []).append(c["name"])
    return {k: k if cols.get(k, [k]) == [k] else f"{k} ({', '.join(cols[k])})" for k in thr}


def timeline(doc: dict) -> str:
    """Throughput per mode (one line each, records/s) against seconds since the load
    started, fault windows as labelled bands (#id kind), anomalies as red bars at the
    bottom; the legend sits below the x axis, outside the plot area."""
    tl = doc.get("timeline", {})
    thr = tl.get("throughput", {})
    bucket_ms = float(tl.get("bucket_ms") or 1000)
    anomalies: dict[int, int] = {}
    for c in doc["columns"]:
        for a in c["anomalies"].values():
            for b, n in a["timeline"]:
                anomalies[b] = anomalies.get(b, 0) + n
    loads = [b for s in thr.values() for b, _ in s]
    times = loads + list(anomalies)
    times += [t for w in doc["faults"] for t in (w["start"], w["end"]) if t is not None]
    if not times:
        return "<p>No timed data in this run.</p>"
    origin = min(loads or times)  # the load's first bucket: 0 s on the axis
    t0, t1 = min(times), max(times) + bucket_ms
    faults = sorted(doc["faults"], key=lambda w: w["start"])
    labels = [f"#{w.get('id', i + 1)} {w['fault']}" for i, w in enumerate(faults)]

    def x(t: float) -> float:
        return ML + (t - t0) / max(t1 - t0, 1) * (W - ML - MR)

    # a label starts at its window, or further left when it would leave the picture
    lxs = [min(x(w["start"]) + 3, W - MR - len(s) * CHAR_W) for w, s in zip(faults, labels,
                                                                              strict=True)]
    rows = _lanes([(a, len(s) * CHAR_W) for a, s in zip(lxs, labels, strict=True)])
    top_y = 14 + 15 * (max(rows) + 1 if rows else 0)  # the plot area's top
    bottom = top_y + PH
    per_s = 1000.0 / bucket_ms
    ymax = max([n * per_s for s in thr.values() for _, n in s] or [1])
    ystep = _step(ymax, 4)
    ymax = math.ceil(ymax / ystep) * ystep

    def y(v: float) -> float:
        return bottom - v / ymax * PH

    parts = [f'<rect class="plot-area" x="{ML}" y="{top_y}" width="{W - ML - MR}" '
             f'height="{PH}" fill="#fafafa" stroke="#999"/>']
    # y axis: records/s, gridlines
    v = 0.0
    while v <= ymax + 1e-9:
        parts.append(f'<line x1="{ML}" x2="{W - MR}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="#e4e4e4"/><text x="{ML - 6}" y="{y(v) + 4:.1f}" font-size="11" '
                     f'text-anchor="end">{v:g}</text>')
        v += ystep
    parts.append(f'<text class="y-label" transform="translate(16,{top_y + PH / 2:.1f}) '
                 f'rotate(-90)" font-size="12" text-anchor="middle">acknowledged records/s'
                 f"</text>")
    # x axis: seconds since the load started
    xstep = _step((t1 - t0) / 1000)
    s = math.ceil((t0 - origin) / 1000 / xstep) * xstep
    while origin + s * 1000 <= t1:
        xx = x(origin + s * 1000)
        parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{bottom}" y2="{bottom + 4}" '
                     f'stroke="#666"/><text x="{xx:.1f}" y="{bottom + 16}" font-size="11" '
                     f'text-anchor="middle">{s:g}</text>')
        s += xstep
    parts.append(f'<text class="x-label" x="{ML + (W - ML - MR) / 2:.1f}" y="{bottom + 34}" '
                 'font-size="12" text-anchor="middle">seconds since the load started '
                 "(its first acknowledged record)</text>")
    # fault windows: a band each, labelled above the plot area with id and kind
    for w, label, row, lx in zip(faults, labels, rows, lxs, strict=True):
        x0 = x(w["start"])
        x1 = x(w["end"] if w["end"] is not None else t1)
        title = escape(f"{label} {w.get('target', '')} "
                       f"{(w['start'] - origin) / 1000:.1f}-"
                       + (f"{(w['end'] - origin) / 1000:.1f} s" if w["end"] is not None
                          else "end (never healed)"))
        parts.append(
            f'<rect class="fault" x="{x0:.1f}" y="{top_y}" width="{max(x1 - x0, 2):.1f}" '
            f'height="{PH}" fill="{FAULT_FILL}" opacity="0.35"><title>{title}</title></rect>'
            f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{14 + 15 * row - 10}" y2="{top_y}" '
            f'stroke="{FAULT_FILL}"/>'
            f'<text class="fault-label" x="{lx:.1f}" y="{14 + 15 * row}" font-size="11">'
            f"{escape(label)}</text>")
    # anomalies: red bars from the bottom, height by count
    amax = max(anomalies.values() or [1])
    for b, n in sorted(anomalies.items()):
        h = 8 + n / amax * 40
        parts.append(f'<rect class="anomaly" x="{x(b):.1f}" y="{bottom - h:.1f}" width="3" '
                     f'height="{h:.1f}" fill="{ANOMALY_FILL}"><title>{n} anomalies at '
                     f"{(b - origin) / 1000:g} s</title></rect>")
    # one line per series, markers too (a run shorter than two buckets has no line)
    names = _series_labels(doc, thr)
    legend: list[tuple[str, str, str]] = []
    for i, (key, series) in enumerate(sorted(thr.items())):
        color = PALETTE[i % len(PALETTE)]
        pts = [(x(b + bucket_ms / 2), y(n * per_s)) for b, n in series]
        parts.append('<polyline class="series" points="'
                     + " ".join(f"{a:.1f},{c:.1f}" for a, c in pts)
                     + f'" fill="none" stroke="{color}" stroke-width="1.5"/>')
        parts += [f'<circle cx="{a:.1f}" cy="{c:.1f}" r="2" fill="{color}"/>' for a, c in pts]
        legend.append(("line", color, names[key]))
    legend += [("box", FAULT_FILL, "fault window (#id kind)"),
               ("box", ANOMALY_FILL, "anomalies (bar height: count)")]
    # the legend: rows of items below the x axis label
    ly, lx, items = bottom + 50, ML, []
    for kind, color, text in legend:
        width = 26 + len(text) * CHAR_W
        if lx + width > W - MR and lx > ML:
            lx, ly = ML, ly + 18
        swatch = (f'<line x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}" stroke="{color}" '
                  f'stroke-width="2.5"/>' if kind == "line" else
                  f'<rect x="{lx}" y="{ly - 6}" width="18" height="12" fill="{color}" '
                  f'opacity="{0.5 if color == FAULT_FILL else 1}"/>')
        items.append(f'{swatch}<text x="{lx + 24}" y="{ly + 4}" font-size="11">'
                     f"{escape(text)}</text>")
        lx += width + 14
    lh = ly - (bottom + 50) + 22
    height = bottom + 50 + lh
    parts.append(f'<g class="legend"><rect class="legend-box" x="{ML - 6}" '
                 f'y="{bottom + 50 - 12}" width="{W - MR - ML + 6}" height="{lh}" '
                 f'fill="none" stroke="#ddd"/>{"".join(items)}</g>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height:.0f}" '
            f'viewBox="0 0 {W} {height:.0f}" class="plot timeline">' + "".join(parts) + "</svg>")


def partition_plot(plot: dict) -> str:
    """Sequence number against offset in one partition; anomalous offsets in red.

    Hollow points were seen only at read_uncommitted (aborted or open transactions)."""
    pts = plot["points"]
    if not pts:
        return "<p>No observed records near the anomalies.</p>"
    bad = set(plot["anomalous_offsets"])
    o0, o1 = min(p[0] for p in pts), max(p[0] for p in pts)
    seqs = [p[2] for p in pts if p[2] is not None] or [0]
    s0, s1 = min(seqs), max(seqs)
    pids = sorted({p[1] for p in pts if p[1] is not None})
    h = 220
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h + 30}" class="plot">',
        f'<rect x="{PAD}" y="5" width="{W - 2 * PAD}" height="{h}" fill="#fafafa" stroke="#ccc"/>',
    ]
    for off, pid, seq, _ses, _txn, rc, _ru in pts:
        x = PAD + (off - o0) / max(o1 - o0, 1) * (W - 2 * PAD)
        y = 5 + h - 8 - ((seq if seq is not None else s0) - s0) / max(s1 - s0, 1) * (h - 16)
        color = (
            "#d62728" if off in bad else PALETTE[pids.index(pid) % len(PALETTE)] if pid else "#000"
        )
        fill = color if rc else "none"
        out.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{4 if off in bad else 2}" fill="{fill}" '
            f'stroke="{color}"><title>offset {off} {escape(str(pid))} seq {seq}</title></circle>'
        )
    out.append(
        f'<text x="{PAD}" y="{h + 22}" font-size="11">offset {o0}</text>'
        f'<text x="{W - PAD - 90}" y="{h + 22}" font-size="11">offset {o1}</text>'
        f'<text x="{W / 2 - 150}" y="{h + 22}" font-size="11">y: sequence number per '
        f"producer ({', '.join(escape(p) for p in pids)})</text></svg>"
    )
    return "".join(out)
