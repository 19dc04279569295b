"""Inline SVG plots, generated as text: no scripts, fonts or network resources."""

from __future__ import annotations

from html import escape

PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
W, H, PAD = 1100, 260, 40


def _x(t: float, t0: float, t1: float) -> float:
    return PAD + (t - t0) / max(t1 - t0, 1) * (W - 2 * PAD)


def timeline(doc: dict) -> str:
    """Fault windows (bands) against throughput per mode (lines) and anomalies (bars)."""
    thr = doc.get("timeline", {}).get("throughput", {})
    anomalies: dict[int, int] = {}
    for c in doc["columns"]:
        for a in c["anomalies"].values():
            for b, n in a["timeline"]:
                anomalies[b] = anomalies.get(b, 0) + n
    times = [b for s in thr.values() for b, _ in s] + list(anomalies)
    times += [t for w in doc["faults"] for t in (w["start"], w["end"]) if t is not None]
    if not times:
        return "<p>No timed data in this run.</p>"
    t0, t1 = min(times), max(times) + 1000
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" class="plot">',
        f'<rect x="{PAD}" y="10" width="{W - 2 * PAD}" height="{H - 50}" '
        'fill="#fafafa" stroke="#ccc"/>',
    ]
    for w in doc["faults"]:
        x0, x1 = _x(w["start"], t0, t1), _x(w["end"] if w["end"] is not None else t1, t0, t1)
        parts.append(
            f'<rect x="{x0:.1f}" y="10" width="{max(x1 - x0, 2):.1f}" height="{H - 50}" '
            f'fill="#ffb347" opacity="0.35"><title>{escape(str(w["fault"]))}</title></rect>'
            f'<text x="{x0 + 2:.1f}" y="24" font-size="11">{escape(str(w["fault"]))}</text>'
        )
    top = max([n for s in thr.values() for _, n in s] or [1])
    for i, (mode, series) in enumerate(sorted(thr.items())):
        pts = " ".join(f"{_x(b, t0, t1):.1f},{H - 40 - n / top * (H - 80):.1f}" for b, n in series)
        color = PALETTE[i % len(PALETTE)]
        parts.append(
            f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>'
            f'<text x="{W - PAD - 200}" y="{40 + 14 * i}" fill="{color}" font-size="11">'
            f"{escape(mode)} acks/s</text>"
        )
        # markers too: a run shorter than two buckets has no line to draw
        parts += [f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="2.5" fill="{color}"/>'
                  for p in pts.split()]  # fmt: skip
    amax = max(anomalies.values() or [1])
    for b, n in anomalies.items():
        h = 8 + n / amax * 40
        parts.append(
            f'<rect x="{_x(b, t0, t1):.1f}" y="{H - 40 - h:.1f}" width="3" height="{h:.1f}" '
            f'fill="#d62728"><title>{n} anomalies</title></rect>'
        )
    parts.append(
        f'<text x="{PAD}" y="{H - 22}" font-size="11">0 s</text>'
        f'<text x="{W - PAD - 40}" y="{H - 22}" font-size="11">{(t1 - t0) / 1000:.0f} s</text>'
        f'<text x="{W / 2 - 120}" y="{H - 6}" font-size="11">time; orange = fault windows, '
        f"red = anomalies</text></svg>"
    )
    return "".join(parts)


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
