"""The self-test's table in the reports (``chaos --selftest``): per run, and across runs.

A run's ``selftest`` section is :meth:`SelfTestResult.as_json` (RUN/selftest.json): one row
per mutation (injected kind and place, detected with the right kind and place, verdict as
the expectation table says, false alarms). It is the evidence for "would this tool have
caught it, on this run?"
"""

from __future__ import annotations

from html import escape

EXPLAIN = ("Each row is a copy of this run with one anomaly (or one legal near miss) "
           "injected where a real record sits, every later offset moved in every reader's "
           "observations, the histories and the drain. The copy is judged by the same checks: "
           "the injected anomaly must be found with its kind and place, each column's verdict "
           "must be what the expectation table says, and nothing else may appear.")


def _yes(ok: bool) -> str:
    return "<span class='yes'>yes</span>" if ok else "<span class='no'>NO</span>"


def headline(section: dict | None) -> str:
    """One line: "14/14 mutations as expected: PASS" (or why there is no table)."""
    if not section:
        return ""
    if section.get("error"):
        return f"self-test not run: {section['error']}"
    rows = section.get("rows", [])
    return (f"{section.get('passed', sum(r['ok'] for r in rows))}/{len(rows)} mutations as "
            f"expected: {'PASS' if section.get('ok') else 'FAIL'}")


def selftest_html(section: dict | None) -> str:
    """A run's self-test table (empty when the run was not self-tested)."""
    if not section:
        return ""
    head = "<h2 id='selftest'>Self-test: would these checks have caught it?</h2>"
    if section.get("error"):
        return f"{head}<p>{escape(headline(section))}</p>"
    rows = []
    for r in section["rows"]:
        injected = (f"legal: {r['place']}" if r["kind"] == "legal"
                    else f"{r['kind']} at {r['place']}")  # fmt: skip
        notes = [f"missed {m}" for m in r["missed"]] + [f"verdict {v}" for v in r["verdicts"]]
        if r.get("kept"):
            notes.append(f"copy kept in {r['kept']}")
        rows.append(
            f"<tr><td>{escape(r['mutation'])}</td>"
            f"<td>{escape(injected)}</td><td>{_yes(r['detected'])}</td>"
            f"<td>{_yes(r['verdict_ok'])}</td>"
            f"<td>{escape(', '.join(r['false_alarms']) or 'none')}</td>"
            f"<td class='f'>{escape('; '.join(notes))}</td></tr>")
    skipped = "".join(f"<li>{escape(s)}</li>" for s in section.get("skipped", []))
    return (f"{head}<p><b>{escape(headline(section))}</b> (seed {section.get('seed')})</p>"
            f"<p class='legend'>{escape(EXPLAIN)}</p>"
            f"<table id='selftest-table'><tr><th>mutation</th><th>injected</th>"
            f"<th>detected (kind + place)</th><th>verdict as the table says</th>"
            f"<th>false alarms</th><th></th></tr>{''.join(rows)}</table>"
            + (f"<p>Not applicable to this run:</p><ul>{skipped}</ul>" if skipped else ""))


def matrix_selftest_html(docs: list[dict], href) -> str:
    """Across the scenarios: one row per mutation, one column per self-tested run."""
    tested = [d for d in docs if d.get("selftest")]
    if not tested:
        return ""
    names: list[str] = []
    for d in tested:
        names += [r["mutation"] for r in d["selftest"].get("rows", [])
                  if r["mutation"] not in names]  # fmt: skip
    head = "".join(f"<th><a href='{href(d.get('run_dir'), '#selftest')}'>"
                   f"{escape(d['scenario'])}</a></th>" for d in tested)
    rows = []
    for name in names:
        tds = []
        for d in tested:
            row = next((r for r in d["selftest"].get("rows", []) if r["mutation"] == name), None)
            if row is None:
                tds.append("<td class='none'>n/a</td>")
            else:
                tds.append(f"<td class='{'PASS' if row['ok'] else 'FAIL'}'>"
                           f"{'caught' if row['ok'] and row['kind'] != 'legal' else ''}"
                           f"{'no alarm' if row['ok'] and row['kind'] == 'legal' else ''}"
                           f"{'' if row['ok'] else 'NO'}</td>")
        kind = next(r["kind"] for d in tested for r in d["selftest"].get("rows", [])
                    if r["mutation"] == name)  # fmt: skip
        label = escape(name) + (" <span class='f'>(legal)</span>" if kind == "legal" else "")
        rows.append(f"<tr><td>{label}</td>{''.join(tds)}</tr>")
    total = "".join(f"<td>{escape(headline(d['selftest']))}</td>" for d in tested)
    return (f"<h2 id='selftest'>Self-test: would these checks have caught it?</h2>"
            f"<p class='legend'>{escape(EXPLAIN)}</p>"
            f"<table id='selftest-matrix'><tr><th>mutation</th>{head}</tr>{''.join(rows)}"
            f"<tr><td>result</td>{total}</tr></table>")


def selftest_markdown(docs: list[dict]) -> str:
    """One line per self-tested scenario, for a pull-request comment."""
    lines = [f"- `{d['scenario']}`: {headline(d['selftest'])}" for d in docs if d.get("selftest")]
    return ("\n**Self-test** (each anomaly injected into a copy of the run):\n\n"
            + "\n".join(lines) + "\n") if lines else ""
