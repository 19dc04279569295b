"""report.html: one self-contained page (inline CSS and SVG, no network resources)."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from verifier.judge.model import KINDS
from verifier.report.svg import partition_plot, timeline
from verifier.report.terminal import COUNT_ROWS

CSS = """
body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 20px}
th,td{border:1px solid #bbb;padding:4px 10px;text-align:right}
th:first-child,td:first-child{text-align:left}
.forbidden{background:#f8c4c4;font-weight:bold}.tolerated{background:#fff3c4}
.expected{background:#d6ecff}.inconclusive{background:#e0e0e0}.na{color:#999}
.PASS{background:#b9e6b9;font-weight:bold}.FAIL{background:#f08080;font-weight:bold}
.UNKNOWN{background:#d0d0d0;font-weight:bold}
pre{background:#f4f4f4;padding:8px;overflow-x:auto;font-size:12px}
"""


def _table(doc: dict) -> str:
    cols = doc["columns"]
    h = [
        "<table id='verdicts'><tr><th></th>",
        *[f"<th>{escape(c['name'])}</th>" for c in cols],
        "</tr>",
    ]
    for k in COUNT_ROWS:
        h += [f"<tr><td>{k}</td>", *[f"<td>{c['counts'].get(k, 0)}</td>" for c in cols], "</tr>"]
    for k in KINDS:
        h.append(f"<tr><td>{k}</td>")
        for c in cols:
            a = c["anomalies"][k]
            cls = "na" if a["expectation"] == "n/a" else a["expectation"] if a["count"] else ""
            text = "—" if a["expectation"] == "n/a" and not a["count"] else str(a["count"])
            h.append(f"<td class='{cls}' title='{a['expectation']}'>{text}</td>")
        h.append("</tr>")
    h += [
        "<tr><td>verdict</td>",
        *[f"<td class='{c['verdict']}'>{c['verdict']}</td>" for c in cols],
        "</tr></table>",
    ]
    return "".join(h)


def _samples(doc: dict) -> str:
    out = []
    for c in doc["columns"]:
        for r in c["reasons"]:
            out.append(f"<p><b>{escape(c['name'])}</b>: UNKNOWN because {escape(r)}</p>")
        for k, a in c["anomalies"].items():
            if a["count"]:
                lines = "\n".join(json.dumps(s, sort_keys=True) for s in a["sample"][:10])
                out.append(
                    f"<h3>{escape(c['name'])}: {a['count']} {k} ({a['expectation']})</h3>"
                    f"<pre>{escape(lines)}</pre>"
                )
    return "".join(out) or "<p>No anomalies.</p>"


def render_html(doc: dict) -> str:
    """The whole page."""
    checks = "".join(
        f"<tr><td>{escape(n)}</td><td>{c['status']}</td><td>{c['seconds']}</td></tr>"
        + (f"<tr><td colspan=3><pre>{escape(c['traceback'])}</pre></td></tr>"
           if c["traceback"] else "")
        for n, c in doc["checks"].items())  # fmt: skip
    plots = "".join(f"<h3>{escape(p['topic'])} partition {p['partition']}</h3>{partition_plot(p)}"
                    for p in doc.get("partition_plots", []))  # fmt: skip
    drain = "complete" if doc["drain"]["completed"] else "INCOMPLETE"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(doc['scenario'])} "
        f"verdict</title><style>{CSS}</style></head><body>"
        f"<h1>Delivery verdict: {escape(doc['scenario'])}</h1>"
        f"<p>run {escape(doc['run'])} · sink {escape(doc['sink'])} · drain {drain} · "
        f"exit code {doc['exit_code']}</p><h2>Modes side by side</h2>{_table(doc)}"
        f"<h2>Timeline</h2>{timeline(doc)}<h2>Anomalies</h2>{_samples(doc)}"
        f"<h2>Anomalous partitions</h2>{plots or '<p>None.</p>'}"
        f"<h2>Checks</h2><table><tr><th>check</th><th>status</th><th>seconds</th></tr>{checks}"
        f"</table></body></html>"
    )


def write_html(doc: dict, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(doc), encoding="utf-8")
    return path
