"""report.html: one self-contained page (inline CSS and SVG, no network resources)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from verifier.judge.duplicate_window import window_rows
from verifier.report.compare import anchor, load_of, load_text, workload
from verifier.report.connections import lanes_svg, render_connections
from verifier.report.differences import comparison_line, difference_table
from verifier.report.evidence import evidence_text
from verifier.report.heads import column_head
from verifier.report.kinds import ABSENT, table_kinds
from verifier.report.selftest import selftest_html
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
.SKIPPED{background:#f3e3a0;font-weight:bold}
.NOT-EXERCISED{background:#e4dcf4;font-weight:bold}.missed{background:#e4dcf4}
pre{background:#f4f4f4;padding:8px;overflow-x:auto;font-size:12px}
table.samples td{text-align:left;font-size:13px}.note{color:#666;font-size:85%;margin:0}
#selftest-table td,#selftest-table th{text-align:left}
.yes{color:#070}.no{color:#b00;font-weight:bold}
.f{font-size:85%}.legend{font-size:85%;color:#555;max-width:1100px}
"""

SAMPLE_ROWS = 20


def _table(doc: dict) -> str:
    cols = doc["columns"]
    h = [
        "<table id='verdicts'><tr><th></th>",
        *[f"<th>{column_head(c['name'])}</th>" for c in cols],
        "</tr>",
    ]
    for k in COUNT_ROWS:
        h += [f"<tr><td>{k}</td>", *[f"<td>{c['counts'].get(k, 0)}</td>" for c in cols], "</tr>"]
    for k in table_kinds(cols):
        h.append(f"<tr><td>{k}</td>")
        for c in cols:
            a = c["anomalies"].get(k, ABSENT)
            cls = "na" if a["expectation"] == "n/a" else a["expectation"] if a["count"] else ""
            text = "—" if a["expectation"] == "n/a" and not a["count"] else str(a["count"])
            h.append(f"<td class='{cls}' title='{a['expectation']}'>{text}</td>")
        h.append("</tr>")
    h += _exposure_rows(cols)
    h += [
        "<tr><td>verdict</td>",
        *[f"<td class='{c['verdict'].replace(' ', '-')}'>{c['verdict']}</td>" for c in cols],
        "</tr></table>",
    ]
    return "".join(h)


def _exposure_rows(cols: list[dict]) -> list[str]:
    """One row per fault: what it acted on in each column (verdict.json ``exposure``),
    with what it counts and the load inside against outside its window as a tooltip."""
    from verifier.report.terminal import exposure_cell

    ids: dict[int, str] = {}
    for c in cols:
        for e in (c.get("exposure") or {}).get("faults", []):
            ids.setdefault(e["id"], f"exposed: {e['fault']} #{e['id']}")
    h = []
    for fid, label in sorted(ids.items()):
        h.append(f"<tr><td>{escape(label)}</td>")
        for c in cols:
            e = next((x for x in (c.get("exposure") or {}).get("faults", [])
                      if x["id"] == fid), None)  # fmt: skip
            if e is None:
                h.append("<td class='na' title='does not concern this column'>·</td>")
                continue
            tip = e.get("what") or ""
            if e.get("rate_out") is not None:
                tip += f"; load {e.get('rate_in')}/s inside against {e['rate_out']}/s outside"
            if e.get("why"):
                tip += f"; {e['why']}"
            cls = " class='missed'" if e.get("exercised") is False else ""
            h.append(f"<td{cls} title='{escape(tip)}'>{escape(exposure_cell(e))}</td>")
        h.append("</tr>")
    return h


def _plot_id(topic, partition) -> str:
    return "p-" + "".join(ch if ch.isalnum() else "-" for ch in f"{topic}-{partition}")


def _ident(s: dict) -> str:
    """``pid:p:seq``; an identity's partition ``p`` is the one it was judged in."""
    parts = (s.get("pid"), s.get("p", s.get("partition")), s.get("seq"))
    return ":".join(str(x) for x in parts if x is not None)


def _readers(s: dict) -> str:
    ev = s.get("evidence") or {}
    seen = ev.get("seen_by") if isinstance(ev, dict) else None
    out = s.get("reader") or ""
    if seen:
        out += f" (seen by {', '.join(map(str, seen))})" if out else ", ".join(map(str, seen))
    return out


def _sample_table(doc: dict, samples: list[dict], plotted: set, kind: str | None = None) -> str:
    """Anomaly samples as rows; the partition links to its offset plot when there is one;
    the evidence reads as a sentence (:mod:`verifier.report.evidence`)."""
    rows = []
    for s in samples:
        part = f"{s.get('topic')}[{s.get('partition')}]"
        if (s.get("topic"), s.get("partition")) in plotted:
            part = f"<a href='#{_plot_id(s.get('topic'), s.get('partition'))}'>{escape(part)}</a>"
        else:
            part = escape(part)
        offs = s.get("offsets") or ([s["offset"]] if s.get("offset") is not None else [])
        ev = s.get("evidence")
        ev = {k: v for k, v in ev.items() if k != "seen_by"} if isinstance(ev, dict) else ev
        cells = [part, ", ".join(map(str, offs)), _ident(s), s.get("ses"), s.get("txn"),
                 _readers(s), s.get("isolation"), evidence_text(s.get("kind", kind), ev)]
        rows.append("<tr>" + "".join(
            f"<td>{c if i == 0 else escape('' if c is None else str(c))}</td>"
            for i, c in enumerate(cells)) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("partition", "offset(s)", "identity (pid:p:seq)",
                                             "session", "transaction", "readers", "isolation",
                                             "evidence"))
    return f"<table class='samples'><tr>{head}</tr>{''.join(rows)}</table>"


def _samples(doc: dict) -> str:
    plotted = {(p["topic"], p["partition"]) for p in doc.get("partition_plots", [])}
    out = []
    for c in doc["columns"]:
        if c.get("skipped"):
            out.append(f"<p><b>{escape(c['name'])}</b>: SKIPPED because "
                       f"{escape(c['skipped'])}</p>")
        for r in c["reasons"]:
            out.append(f"<p><b>{escape(c['name'])}</b>: UNKNOWN because {escape(r)}</p>")
        for r in c.get("not_exercised") or []:
            out.append(f"<p><b>{escape(c['name'])}</b>: NOT EXERCISED because "
                       f"{escape(r)}</p>")
        if comparison_line(c):  # the reference oracle: what it compared
            out.append(f"<p><b>{escape(comparison_line(c))}</b></p>")
        for r in c.get("liveness") or []:
            out.append(f"<p><b>{escape(c['name'])}</b>: LIVENESS (a finding about the "
                       f"client, not a verdict): {escape(r)}</p>")
        for k, a in c["anomalies"].items():
            if a["count"]:
                shown = a["sample"][:SAMPLE_ROWS]
                out.append(
                    f"<h3 id='{anchor(c['name'], k)}'>{escape(c['name'])}: {a['count']} {k} "
                    f"<span class='{a['expectation']}'>({a['expectation']})</span></h3>"
                    f"<p class='note'>{len(shown)} of {a['count']} shown</p>"
                    + (difference_table(shown, k) if c.get("oracle")  # rows, not records
                       else _sample_table(doc, shown, plotted, k))
                )
    return "".join(out) or "<p>No anomalies.</p>"


def _load(doc: dict) -> str:
    """Each mode's achieved rate against the workload's (when config.json is there)."""
    work = workload(doc)
    if not work:
        return ""
    items = "".join(f"<li>{escape(c['name'])}: {escape(load_text(load_of(doc, c, work)))}</li>"
                    for c in doc["columns"])
    return f"<p>Load per mode (achieved against requested):</p><ul>{items}</ul>"


def _connections(doc: dict) -> str:
    """The connection summary and the lanes: one per client process and broker."""
    section = doc.get("connections")
    return (f"<pre>{escape(render_connections(section))}</pre>"
            + lanes_svg(section, doc.get("faults") or []))


def _duplicate_windows(doc: dict) -> str:
    """Real-time mode against the micro-batch trigger: records written again per kill."""
    rows = window_rows(doc)
    if not rows:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in r) + "</tr>"
                   for r in rows[1:])
    return (f"<h2 id='duplicate-window'>Duplicate window per kill</h2>"
            f"<table><tr>{head}</tr>{body}</table>")


def render_html(doc: dict) -> str:
    """The whole page."""
    checks = "".join(
        f"<tr><td>{escape(n)}</td><td>{c['status']}</td><td>{c['seconds']}</td></tr>"
        + (f"<tr><td colspan=3><pre>{escape(c['traceback'])}</pre></td></tr>"
           if c["traceback"] else "")
        for n, c in doc["checks"].items())  # fmt: skip
    plots = "".join(f"<h3 id='{_plot_id(p['topic'], p['partition'])}'>{escape(p['topic'])} "
                    f"partition {p['partition']}</h3>{partition_plot(p)}"
                    for p in doc.get("partition_plots", []))  # fmt: skip
    drain = "complete" if doc["drain"]["completed"] else "INCOMPLETE"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(doc['scenario'])} "
        f"verdict</title><style>{CSS}</style></head><body>"
        f"<h1>Delivery verdict: {escape(doc['scenario'])}</h1>"
        f"<p>run {escape(doc['run'])} · sink {escape(doc['sink'])} · "
        f"Kafka {escape(str(doc.get('kafka_version') or 'not recorded'))} · "
        f"client {escape(', '.join(doc.get('clients') or ['kafka-python']))} · drain {drain} · "
        f"exit code {doc['exit_code']}</p><h2>Modes side by side</h2>{_table(doc)}{_load(doc)}"
        f"{_duplicate_windows(doc)}"
        f"<h2>Timeline</h2>{timeline(doc)}<h2>Anomalies</h2>{_samples(doc)}"
        f"<h2>Anomalous partitions</h2>{plots or '<p>None.</p>'}"
        f"<h2 id='connections'>Connections</h2>{_connections(doc)}"
        f"{selftest_html(doc.get('selftest'))}"
        f"<h2>Checks</h2><table><tr><th>check</th><th>status</th><th>seconds</th></tr>{checks}"
        f"</table></body></html>"
    )


def write_html(doc: dict, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(doc), encoding="utf-8")
    return path
