"""The scenario x mode matrix of a chaos run: OUT/verdict.json, junit.xml, report.html."""

from __future__ import annotations

from html import escape
from pathlib import Path

from verifier.rundata.formats import write_json

MATRIX_FORMAT = "chaos-matrix"


def matrix_html(grid: dict, docs: list[dict], out_dir: Path) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in grid["columns"])
    rows = []
    for doc in docs:
        link = Path(doc["run_dir"]) / "report.html"
        try:
            href = link.relative_to(out_dir)
        except ValueError:
            href = link
        cells = "".join(
            f"<td class='{grid['grid'][doc['scenario']].get(c, '')}'>"
            f"{grid['grid'][doc['scenario']].get(c, '-')}</td>" for c in grid["columns"])
        wall = doc.get("phases", {}).get("total_s", 0)
        fired = "<br>".join(escape(x) for x in doc.get("fault_summary", [])) or "none"
        rows.append(f"<tr><td><a href='{escape(str(href))}'>{escape(doc['scenario'])}</a></td>"
                    f"{cells}<td>{wall:.0f}s</td><td class='f'>{fired}</td></tr>")
    css = ("body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px}"
           "table{border-collapse:collapse}.PASS{background:#cfc}.FAIL{background:#fcc}"
           ".UNKNOWN{background:#ffc}.f{font-size:85%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>chaos matrix</title>"
            f"<style>{css}</style></head><body><h1>Delivery guarantees under faults</h1>"
            f"<p>exit code {grid['exit_code']}; each scenario links to its own report.</p>"
            f"<table><tr><th>scenario</th>{head}<th>wall time</th><th>faults</th></tr>"
            f"{''.join(rows)}"
            f"</table></body></html>")


def write_matrix(docs: list[dict], out_dir: Path, meta: dict) -> dict:
    from verifier.judge.verdict import combine
    from verifier.report.junit import write_junit

    out_dir.mkdir(parents=True, exist_ok=True)
    grid = combine(docs)
    write_json(out_dir / "verdict.json", MATRIX_FORMAT, {**meta, "grid": grid, "runs": docs,
                                                        "exit_code": grid["exit_code"]},
               indent=True)
    write_junit(docs, out_dir / "junit.xml")
    (out_dir / "report.html").write_text(matrix_html(grid, docs, out_dir), encoding="utf-8")
    return grid
