"""The exploration's report: OUT/report.md (findings, the coverage table, what the budget
left untried, the rate) and the same in short on the terminal (docs/explore.md)."""

from __future__ import annotations

from verifier.orchestration.explore.fingerprint import known_text
from verifier.orchestration.explore.ledger import (
    Ledger,
    coverage,
    coverage_markdown,
    coverage_text,
)


def rate(ledger: Ledger) -> tuple[int, float, float, float]:
    """Trials run, minutes spent (every call of the folder, shrinks included), trials
    per minute of that, and trials per minute of the trials' own runs."""
    tried = sum(int(s.get("tried") or 0) for s in ledger.sessions)
    minutes = sum(float(s.get("seconds") or 0) for s in ledger.sessions) / 60
    runs = sum(float(t.get("seconds") or 0) for t in ledger.trials.values()) / 60
    return (tried, minutes, tried / minutes if minutes else 0.0,
            len(ledger.trials) / runs if runs else 0.0)


def finding_lines(name: str, f: dict) -> list[str]:
    shrink = f.get("shrink")
    who = "the client's own request" if f.get("own") else "a replayed copy only (the " \
        "client never sends it twice)"
    lines = [f"### {name}", "",
             f"- fingerprint: {f['text']} (column {f['column']})",
             f"- known bug: {known_text(f.get('known') or [])}",
             f"- perturbation produced by: {who}",
             f"- found after {float(f.get('found_after_s') or 0) / 60:.1f} min of "
             f"exploration; runs showing it: {len(f['runs'])} ({', '.join(f['trials'])})",
             f"- first run: {f['runs'][0]}"]
    if f.get("shrunk_with"):
        lines.append(f"- shrunk with {f['shrunk_with']} (the same run)")
    elif shrink is None:
        lines.append("- not shrunk yet (the budget ran out first: the next call shrinks it)")
    else:
        ok, n = shrink["confirmed"]
        lines += [f"- shrink: {shrink['stopped']}, {shrink['runs']} runs in "
                  f"{shrink['seconds'] / 60:.1f} min; removed: "
                  f"{'; '.join(shrink['removed']) or 'nothing'}; "
                  + (f"undone (its first result did not reproduce): "
                     f"{'; '.join(shrink['undone'])}; " if shrink.get("undone") else "")
                  + f"the result reproduced "
                  f"{ok}/{n}; its perturbations: {' + '.join(shrink['cells']) or 'none'}",
                  f"- report: {shrink['report']}"]
    if f.get("scenario"):
        lines.append(f"- scenario: {f['scenario']}")
    return lines + [""]


def write_report(ledger: Ledger, planned: list[str], job) -> list[str]:
    """Write OUT/report.md; return the terminal's lines."""
    rows = coverage(ledger, planned)
    untried = [k for k in planned if not ledger.tried(k)]
    tried, minutes, per_min, per_run_min = rate(ledger)
    head = (f"Kafka {ledger.kafka_version}, client {ledger.client}"
            + (f", {', '.join(ledger.settings)}" if ledger.settings else "")
            + (f", requests {','.join(ledger.requests)}" if ledger.requests else ""))
    firsts = [float(f.get("found_after_s") or 0) for f in ledger.findings.values()]
    first = f"; first finding after {min(firsts) / 60:.1f} min" if firsts else ""
    summary = (f"{tried} trials in {minutes:.1f} min, shrinks included ({per_min:.2f} per "
               f"minute; {per_run_min:.2f} per minute of the trials' own runs) over "
               f"{len(ledger.sessions)} call(s){first}; {len(ledger.findings)} finding(s); "
               f"{len(untried)} of {len(planned)} planned trials untried")
    md = [f"# verifier explore: {head}", "", summary, "", "## Findings", ""]
    for name, f in ledger.findings.items():
        md += finding_lines(name, f)
    if not ledger.findings:
        md += ["No FAIL: every trial run so far kept its promise or did not expose its "
               "perturbation (the coverage table says which).", ""]
    md += ["## Coverage", "", "Per cell (request type, perturbation, release event): trials "
           "that tried it, that exposed it (it acted on a column inside its window), clean "
           "(every column PASS), FAIL, neither (NOT EXERCISED or UNKNOWN), and planned "
           "trials not run yet.", ""]
    md += coverage_markdown(rows)
    md += ["", "## Untried", ""]
    md += [f"- {k}" for k in untried] or ["- nothing: every planned trial ran"]
    (job.out / "report.md").write_text("\n".join(md) + "\n")
    term = ["", f"=== explore: {head}", *coverage_text(rows), ""]
    for name, f in ledger.findings.items():
        shrunk = f.get("scenario") or "not shrunk yet"
        term.append(f"FINDING {name}: {known_text(f.get('known') or [])}; "
                    f"{'own request' if f.get('own') else 'replay only'}; {shrunk}")
    term += [summary, f"report: {job.out / 'report.md'}"]
    return term
