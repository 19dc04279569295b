"""The scenario x mode matrix of a chaos run: OUT/verdict.json, junit.xml, report.html.

report.html: the grid, each cell with its verdict and what was observed, then the
"delivered guarantees" summary per mode (each count linking to the anomalies in its
scenario's report, each kind to the mechanism that produces it)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from verifier.report.advice import advice_html
from verifier.report.compare import (
    CELL_LEGEND,
    MARK,
    MECHANISM,
    REPEAT_LEGEND,
    anchor,
    cells,
    exposure_text,
    fault_kinds,
    load_text,
    outcome_text,
    summary,
    workload,
)
from verifier.report.heads import column_head
from verifier.report.selftest import matrix_selftest_html
from verifier.rundata.formats import write_json

MATRIX_FORMAT = "chaos-matrix"

CSS = ("body{font-family:sans-serif;margin:2em;color:#222}td,th{border:1px solid #ccc;"
       "padding:4px 8px;vertical-align:top}table{border-collapse:collapse;margin:8px 0 16px}"
       ".PASS{background:#cfc}.FAIL{background:#fcc}.UNKNOWN{background:#ffc}"
       ".SKIPPED{background:#f3e3a0}.NOT-EXERCISED{background:#e4dcf4}"
       ".runs{font-size:80%}.runs a{margin-right:6px;white-space:nowrap}"
       ".f{font-size:85%}.cell b{display:block}.obs{font-size:90%}"
       ".forbidden{color:#b00;font-weight:bold}.tolerated{color:#7a5d00}"
       ".expected{color:#1f5fa8}.inconclusive{color:#555}.none{color:#999}"
       ".legend{font-size:85%;color:#555;max-width:1100px}dt{font-weight:bold;margin-top:8px}"
       "dd{margin-left:1.5em;max-width:1000px}#selftest-matrix td{text-align:center}"
       "#selftest-matrix td:first-child{text-align:left}"
       # the fault lines: a row folded under their scenario, not a column (a column of
       # them ran off the right edge of a 1400-px window)
       "tr.faults td{border-top:none;color:#444}tr.faults summary{cursor:pointer}"
       "tr.faults div{overflow-wrap:anywhere;max-width:1200px}")


def _href(run_dir: str | None, out_dir: Path, frag: str = "") -> str:
    if not run_dir:
        return ""
    link = Path(run_dir) / "report.html"
    try:
        link = link.relative_to(out_dir)
    except ValueError:
        pass
    return escape(str(link)) + frag


def css_class(verdict: str) -> str:
    """A verdict as a CSS class name (``NOT EXERCISED`` -> ``NOT-EXERCISED``)."""
    return verdict.replace(" ", "-")


def _grid_html(grid: dict, docs: list[dict], out_dir: Path) -> str:
    detail = cells(docs)
    runs: dict[str, list[dict]] = {}
    for doc in docs:
        runs.setdefault(doc["scenario"], []).append(doc)
    # a column name may break after its '@': transactional@read_uncommitted is wider than
    # any cell under it, and five of them pushed the grid past a 1280-px window
    head = "".join(f"<th>{column_head(c)}</th>" for c in grid["columns"])
    rows = []
    for sc, group in runs.items():
        tds = []
        for c in grid["columns"]:
            cell = detail.get(sc, {}).get(c)
            if cell is None:
                tds.append(f"<td>{grid['grid'][sc].get(c, '-')}</td>")
                continue
            where = {k: _href(run, out_dir, "#" + anchor(c, k))
                     for k, run in cell["where"].items()}
            obs = "".join(
                f"<span class='obs {e}'><a href='{where[k]}'>"
                f"{n} {escape(k)}</a> {MARK[e]}</span><br>" for k, n, e in cell["observed"])
            text = outcome_text(cell["outcomes"])
            exposed = exposure_text(cell["exposure"])  # the legend's "exp N", as on the terminal
            exp = f"<span class='f exp'>{escape(exposed)}</span>" if exposed else ""
            tds.append(f"<td class='cell {css_class(cell['verdict'])}' "
                       f"title='{escape(cell['text'])}'><b>{escape(text)}</b>{obs}{exp} "
                       f"{_runs_html(cell, out_dir)}</td>")  # "exp 3 #1 PASS", not "exp 3#1"
        wall = sum(d.get("phases", {}).get("total_s", 0) for d in group)
        href = _href(group[0].get("run_dir"), out_dir)
        name = f"<a href='{href}'>{escape(sc)}</a>"
        if len(group) > 1:
            name += f"<br><span class='f'>{len(group)} runs</span>"
        rows.append(f"<tr id='s-{escape(sc)}'><td>{name}</td>{''.join(tds)}"
                    f"<td>{wall:.0f}s</td></tr>"
                    f"<tr class='faults'><td></td><td colspan={len(grid['columns']) + 1} "
                    f"class='f'>{_faults_html(group)}</td></tr>")
    legend = CELL_LEGEND + ("; " + REPEAT_LEGEND if any(len(g) > 1 for g in runs.values())
                            else "")
    return (f"<table id='grid'><tr><th>scenario</th>{head}<th>wall time</th>"
            f"</tr>{''.join(rows)}</table><p class='legend'>{escape(legend)}</p>")


def _runs_html(cell: dict, out_dir: Path) -> str:
    """A repeated cell's runs, each linking its report: ``#1 PASS #2 FAIL``."""
    if len(cell["outcomes"]) < 2:
        return ""
    links = " ".join(f"<a href='{_href(run, out_dir)}' title='run {i}: {escape(v)}'>"
                    f"#{i}&nbsp;{escape(v)}</a>"
                    for i, (run, v) in enumerate(zip(cell["runs"], cell["outcomes"],
                                                     strict=True), 1))
    return f"<span class='runs'>{links}</span>"


def _faults_html(group: list[dict]) -> str:
    """What the faults did, per run of the scenario (each run draws its own schedule),
    folded under a summary naming the fault kinds."""
    def one(doc: dict) -> str:
        return "<br>".join(escape(x) for x in doc.get("fault_summary", [])) or "none"

    kinds = []
    for d in group:
        kinds += [k for k in fault_kinds(d) if k not in kinds]
    if not kinds and not any(d.get("fault_summary") for d in group):
        return "faults: none"
    body = (one(group[0]) if len(group) == 1 else
            "<br>".join(f"#{i}: {one(d)}" for i, d in enumerate(group, 1)))
    return (f"<details><summary>faults: {escape(', '.join(kinds) or 'none')}</summary>"
            f"<div>{body}</div></details>")


def summary_html(docs: list[dict], out_dir: Path, workloads: dict | None = None) -> str:
    """The "delivered guarantees" table and the mechanisms of what was observed."""
    entries = summary(docs, workloads)
    if not entries:
        return ""
    kinds: list[str] = []
    for e in entries:
        kinds += [k for k in e["kinds"] if k not in kinds]
    head = "".join(f"<th>{column_head(e['column'])}</th>" for e in entries)
    rows = []
    loads = []
    for e in entries:
        base = next((x for x in e["load"] if x["scenario"] == "baseline"), None)
        others = ", ".join(f"{x['scenario']} {x['rate']:.0f}/s" for x in e["load"]
                           if x["scenario"] != "baseline")
        loads.append(f"<td class='f'>{escape(load_text(base)) if base else '-'}"
                     + (f"<br>{escape(others)}" if others else "") + "</td>")
    rows.append(f"<tr><td>load (achieved rate)</td>{''.join(loads)}</tr>")
    seen: list[str] = []
    for k in kinds:
        tds = []
        for e in entries:
            kind = e["kinds"].get(k)
            if kind is None or not kind["count"]:
                na = kind is not None and kind["expectation"] == "n/a"
                tds.append(f"<td class='none'>{'n/a' if na else 'not observed'}</td>")
                continue
            if k not in seen:
                seen.append(k)
            where = "<br>".join(
                f"<a href='{_href(w['run_dir'], out_dir, '#' + anchor(e['column'], k))}'>"
                f"{w['count']} in {escape(w['scenario'])}</a>"
                + (f" <span class='f'>({escape(', '.join(w['faults']))})</span>"
                   if w["faults"] and w["faults"] != [w["scenario"]] else
                   " <span class='f'>(no fault)</span>" if not w["faults"] else "")
                for w in kind["where"])
            exp = kind["expectation"] or ""
            tds.append(f"<td><span class='{exp}'>{kind['count']} {MARK.get(exp, '')} "
                       f"{escape(exp)}</span><br>{where}</td>")
        rows.append(f"<tr><td><a href='#why-{k}'>{escape(k)}</a></td>{''.join(tds)}</tr>")
    mech = "".join(f"<dt id='why-{k}'>{escape(MECHANISM[k][0])}</dt><dd>"
                   f"{escape(MECHANISM[k][1])} <i>Source: {escape(MECHANISM[k][2])}.</i></dd>"
                   for k in seen)  # fmt: skip
    return (f"<h2 id='summary'>Delivered guarantees, per mode</h2>"
            f"<p class='legend'>What each mode actually showed across the scenarios: "
            f"how many, in which scenario and under which faults; each count links to its "
            f"anomalies, each kind to how it happens.</p>"
            f"<table id='guarantees'><tr><th></th>{head}</tr>{''.join(rows)}</table>"
            + (f"<h2>Why these happen</h2><dl>{mech}</dl>" if mech else ""))


def matrix_html(grid: dict, docs: list[dict], out_dir: Path,
                workloads: dict | None = None) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>chaos matrix</title>"
            f"<style>{CSS}</style></head><body><h1>Delivery guarantees under faults</h1>"
            f"<p>exit code {grid['exit_code']}; each scenario links to its own report.</p>"
            f"{_grid_html(grid, docs, out_dir)}{summary_html(docs, out_dir, workloads)}"
            f"{matrix_selftest_html(docs, lambda run, frag: _href(run, out_dir, frag))}"
            f"{advice_html(docs)}</body></html>")


def write_matrix(grid: dict, docs: list[dict], out_dir: Path, meta: dict) -> None:
    """OUT/verdict.json (the grid, every run's document, ``meta``), junit.xml and
    report.html of a chaos matrix (``grid``: verifier.assess.outputs.write_matrix's)."""
    from verifier.report.junit import write_junit

    out_dir.mkdir(parents=True, exist_ok=True)
    workloads = {d["run"]: w for d in docs if (w := workload(d))}
    write_json(out_dir / "verdict.json", MATRIX_FORMAT, {**meta, "grid": grid, "runs": docs,
                                                        "workloads": workloads,
                                                        "exit_code": grid["exit_code"]},
               indent=True)
    write_junit(docs, out_dir / "junit.xml")
    (out_dir / "report.html").write_text(matrix_html(grid, docs, out_dir, workloads),
                                         encoding="utf-8")
