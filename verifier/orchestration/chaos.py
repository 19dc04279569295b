"""The chaos matrix: every scenario of a profile, one after another, on one environment.

Each scenario gets its own run directory and outputs; the matrix adds a combined
``verdict.json`` (the scenario x mode grid and every run's document), ``junit.xml`` (a
test case per scenario x mode) and ``report.html`` in the output folder, and the exit code
of the worst verdict (DESIGN §7).
"""

from __future__ import annotations

import sys
import time
import traceback
from html import escape
from pathlib import Path

import orjson

from producers.history import HistoryError, history_path, read_history
from verifier.judge.checks.load import RunFormatError, load_nemesis
from verifier.judge.model import ISOLATIONS, KINDS
from verifier.judge.verdict import VERDICT_FORMAT, VERDICT_VERSION
from verifier.orchestration.orchestrator import RunOptions, ScenarioRun
from verifier.orchestration.scenario import Scenario

MATRIX_FORMAT = "chaos-matrix"
MATRIX_VERSION = 1


def fault_summary(run_dir: Path) -> list[str]:
    """One line per scheduled fault from the nemesis history: did it fire, what it did.
    A killed producer's line also shows its broker identity before and after the restart
    (the ``producer-id`` lines of its history): a transactional restart bumps the epoch of
    the same producer id, which fences the killed session."""
    try:
        ops = load_nemesis(Path(run_dir) / "nemesis.jsonl", "")
    except RunFormatError:
        return []  # the run's own checks report a missing or damaged nemesis history
    starts: dict[int, dict] = {}
    heals: dict[int, dict] = {}
    for ev in ops:
        if ev.get("type") in ("ok", "fail", "info") and ev.get("id"):
            (starts if ev.get("f") == "start" else heals)[ev["id"]] = ev
    idents = producer_identities(Path(run_dir))
    lines = []
    for fid, ev in sorted(starts.items()):
        what = "fired" if ev["type"] == "ok" else f"did not fire ({ev['type']}: " \
            f"{ev.get('error') or ev.get('detail')})"
        detail = ev.get("detail") or {}
        target = detail.get("node") or detail.get("process") or ev.get("target")
        heal = (heals.get(fid) or {}).get("detail") or {}
        extra = f", {heal['hits']} of {heal['matched']} responses hit" if "hits" in heal else ""
        if ev["type"] == "ok" and isinstance(target, str) and target in idents:
            extra += f"; {idents[target]}"
        lines.append(f"{ev['fault']} on {target}: {what}{extra}")
    return lines


def producer_identities(run_dir: Path) -> dict[str, str]:
    """Process name -> "producer id P epoch E (session 1) -> ..." for each generator whose
    history records a broker-assigned identity in more than one session."""
    try:
        producers = orjson.loads((run_dir / "config.json").read_bytes())["producers"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return {}
    out = {}
    for pid, plan in producers.items():
        try:
            events = read_history(history_path(run_dir, pid)).events
        except HistoryError:
            continue  # never started, or damaged: the checks say so
        seen = [(e.get("ses"), e.get("producer_id"), e.get("epoch")) for e in events
                if e.get("type") == "producer-id"]
        if len({s for s, _, _ in seen}) > 1:
            out[f"producer:{plan.get('mode')}"] = " -> ".join(
                f"producer id {p} epoch {e} (session {s})" for s, p, e in seen)
    return out


def crashed_doc(run: ScenarioRun, exc: BaseException) -> dict:
    """A verdict document for a run that could not complete: every mode UNKNOWN."""
    reason = f"{type(exc).__name__}: {exc}"
    names = []  # the same columns a completed run reports (verdict.columns_of)
    for p in run.plans:
        if p.expect == "transactional":
            names += [(p, f"{p.mode}@{iso}", [iso]) for iso in ISOLATIONS]
        else:
            names.append((p, p.mode, list(ISOLATIONS)))
    cols = [{"name": name, "mode": p.mode, "expect": p.expect, "isolations": isos,
             "pids": [p.pid], "topics": [p.topic], "verdict": "UNKNOWN", "forbidden": [],
             "reasons": [f"the run did not complete: {reason}"], "counts": {},
             "anomalies": {k: {"count": 0, "expectation": "inconclusive", "sample": [],
                               "timeline": []} for k in KINDS}} for p, name, isos in names]
    return {
        "format": VERDICT_FORMAT, "version": VERDICT_VERSION, "run": run.run_id,
        "scenario": run.scenario.name, "sink": run.sink,
        "drain": {"completed": False, "behind": []}, "faults": [], "checks": {},
        "columns": cols, "unattributed": [], "exit_code": 2,
        "error": "".join(traceback.format_exception(exc))[-4000:],
        "phases": run.clock.to_json(), "notes": run.notes,
    }  # fmt: skip


def run_one(env, scenario: Scenario, opts: RunOptions, spark, out=sys.stdout) -> dict:
    from verifier.orchestration.analyze import write_outputs
    from verifier.report import render_terminal

    run = ScenarioRun(env, scenario, opts, spark)
    print(f"\n=== scenario {scenario.name}: {scenario.description.split(chr(10))[0]}",
          file=out, flush=True)
    try:
        doc = run.execute()
    except Exception as exc:  # noqa: BLE001 - one scenario fails, not the whole matrix
        print(f"scenario {scenario.name} could not complete: {exc}", file=out)
        doc = crashed_doc(run, exc)
    run.run_dir.mkdir(parents=True, exist_ok=True)
    with run.clock.phase("report"):
        write_outputs(doc, run.run_dir)
        try:
            print(render_terminal(doc), file=out)
        except (KeyError, TypeError) as exc:  # a crashed doc lacks some fields
            print(f"(no table: {exc})", file=out)
    doc["phases"] = run.clock.to_json()
    doc["run_dir"] = str(run.run_dir)
    doc["fault_summary"] = fault_summary(run.run_dir)
    for line in doc["fault_summary"]:
        print(f"fault: {line}", file=out)
    print(f"run folder {run.run_dir}  |  {run.clock.summary()}", file=out, flush=True)
    for note in run.notes:
        print(f"note: {note}", file=out)
    return doc


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
    from verifier.report import combine, write_junit

    out_dir.mkdir(parents=True, exist_ok=True)
    grid = combine(docs)
    doc = {"format": MATRIX_FORMAT, "version": MATRIX_VERSION, **meta, "grid": grid,
           "runs": docs, "exit_code": grid["exit_code"]}
    (out_dir / "verdict.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    write_junit(docs, out_dir / "junit.xml")
    (out_dir / "report.html").write_text(matrix_html(grid, docs, out_dir), encoding="utf-8")
    return grid


def run_matrix(env, scenarios: list[Scenario], opts: RunOptions, spark,
               out=sys.stdout) -> int:
    """Run every scenario; write the combined outputs; return the exit code."""
    from verifier.report import render_grid

    t0 = time.monotonic()
    docs = []
    with env:
        for scenario in scenarios:
            docs.append(run_one(env, scenario, opts, spark, out))
    grid = write_matrix(docs, Path(opts.out), {"profile": opts.profile, "seed": opts.seed,
                                               "environment": env.name})
    print("\n=== verdicts: scenario x mode", file=out)
    print(render_grid(grid), file=out)
    walls = ", ".join(f"{d['scenario']} {d['phases']['total_s']:.0f}s" for d in docs)
    print(f"\nwall time {time.monotonic() - t0:.0f}s ({walls})", file=out)
    print(f"outputs: {opts.out}/verdict.json, junit.xml, report.html", file=out, flush=True)
    return grid["exit_code"]
