"""The advice on screen and in the chaos matrix's report (``verifier advise``, issue 37)."""

from __future__ import annotations

from html import escape


def _value(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return "" if v is None else str(v)


def render_advice(entry: dict) -> str:
    """One configuration's advice (``Advice.to_json()`` plus ``file``, ``check``, ``notes``)
    as terminal text: effective settings, what the client does, the guarantee, then one
    block per fault class with its reasons, sources and scenario."""
    a = entry["advice"]
    lines = [f"== {entry['file']}: {a['kind']} on {a['client']} {a['client_version']}"]
    eff = a["effective"]
    keys = sorted(eff, key=lambda k: (k not in a["settings"], k))
    lines.append("effective: " + ", ".join(
        f"{k}={_value(eff[k])}{'' if k in a['settings'] else ' (default)'}" for k in keys))
    for e in a["effects"]:
        lines.append(f"  the client changes it: {e['reason']} [{e['source']}]")
    for note in entry.get("notes", []):
        lines.append(f"  note: {note}")
    check = entry.get("check")
    if check is not None:
        lines.append("client check: " + check_line(check))
    for r in a["refused"]:
        lines.append(f"refused (table): {r['reason']} [{r['source']}]")
    for f in entry.get("findings", []):
        lines.append(f"FINDING: {f}")
    lines.append(f"guarantee: {a['guarantee']}")
    if check is not None and check.get("ok") is False or a["refused"]:
        return "\n".join(lines)
    for o in a["faults"]:
        what = ", ".join(o["kinds"]) or "nothing the checks would report"
        scen = f"  (scenario {o['scenario']})" if o["scenario"] else "  (no scenario yet)"
        lines.append(f"  {o['fault']:<16}{what}{scen}")
        for r in o["rules"]:
            bug = " (a known bug of some versions)" if r.get("known_bug") else ""
            lines.append(f"      - {r['reason']}{bug} [{r['source']}]")
    return "\n".join(lines)


def check_line(check: dict) -> str:
    who = f"{check['client']} {check['version']}"
    if check.get("ok") is None:
        return f"not run: {check.get('error')}"
    if not check["ok"]:
        return f"{who} REFUSES it: {check['error']} ({check['seconds']:.2f} s)"
    return f"{who} accepts it ({check['seconds']:.2f} s)"


def render_comparison(rows: list[dict]) -> str:
    """After a chaos run: each column's observed kinds against the advice."""
    lines = ["=== verdicts against the advice (verifier advise)"]
    said: dict[str, int] = {}  # a scenario run N times (--repeat) says a same line once
    for r in rows:
        if r["agree"]:
            shown = ", ".join(r["demonstrated"]) or "nothing"
            line = (f"{r['scenario']:<18} {r['column']:<32} {r['verdict']:<8} agrees "
                    f"(showed {shown}; the advice allows "
                    f"{', '.join(r['predicted']) or 'nothing'})")
        else:
            seen = ", ".join(f"{k} x{r['counts'][k]}" for k in r["disagree"])
            line = (f"{r['scenario']:<18} {r['column']:<32} {r['verdict']:<8} DISAGREES: "
                    f"{seen} where the advice says none can happen (the advisor or the "
                    f"client is wrong)")
        said[line] = said.get(line, 0) + 1
    lines += [line if n == 1 else f"{line} (in {n} runs)" for line, n in said.items()]
    return "\n".join(lines)


def _counts(counts: dict) -> str:
    return ", ".join(f"{k} {n}" for k, n in counts.items()) or "nothing"


def advice_html(docs: list[dict]) -> str:
    """The matrix report's section: every cell's verdict against the advice, the
    disagreements first (empty when the run carried no advice)."""
    rows = [r for d in docs for r in d.get("advice_check", [])]
    if not rows:
        return ""
    rows.sort(key=lambda r: r["agree"])
    body = "".join(
        f"<tr class='{'PASS' if r['agree'] else 'FAIL'}'><td>{escape(r['scenario'])}</td>"
        f"<td>{escape(r['column'])}</td><td>{escape(str(r['verdict']))}</td>"
        f"<td>{escape(', '.join(r['predicted']) or 'nothing')}</td>"
        f"<td>{escape(_counts(r['counts']))}</td>"
        f"<td>{'agrees' if r['agree'] else 'DISAGREES: ' + escape(', '.join(r['disagree']))}"
        f"</td></tr>" for r in rows)
    bad = sum(not r["agree"] for r in rows)
    return (f"<h2>Verdicts against the advice</h2><p>{bad} of {len(rows)} cells disagree with "
            "<code>verifier advise</code> (a disagreement is a finding: the advisor or the "
            "client is wrong).</p><table id='advice'><tr><th>scenario</th><th>column</th>"
            "<th>verdict</th><th>the advice allows</th><th>observed</th><th></th></tr>"
            f"{body}</table>")
