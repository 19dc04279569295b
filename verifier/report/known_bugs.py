"""The known-bugs grid on the terminal and on disk: per bug and combination (broker
version, client, broker settings) the documented status, the runs' outcomes, whether they
match, and what the broker answered to each request a hold released late."""

from __future__ import annotations

from pathlib import Path

from verifier.rundata.formats import read_json, write_json

KNOWN_BUGS_FORMAT = "known-bugs-grid"
LEGEND = ("matches: yes = every run reproduced the documented status on its own evidence "
          "(affected: a FAIL with a forbidden anomaly tied to the forced request; fixed, "
          "fenced: a PASS with the forced request refused inside its window); NO = a run "
          "contradicts it (a finding, exit 1); open = a run said nothing about the bug "
          "(UNKNOWN, NOT EXERCISED, SKIPPED, a FAIL not tied to the forced request, a "
          "request released at its bound, not into its window; exit 2). forced: copy = a "
          "replayed copy the client never sent, own = the client's own request held, "
          "answer = an error answer the proxy forged in the broker's place")


def render_known_bug_grid(grid: dict) -> str:
    from verifier.report.forced_evidence import evidence_text

    head = ["bug", "kafka", "client", "broker setting", "documented", "forced", "outcomes",
            "matches", "s/run", "held request, broker answered"]
    rows = [head]
    for r in grid["rows"]:
        walls = r.get("wall_s") or []
        rows.append([r["bug"], r["kafka"], r["client"], r["setting"], r["status"],
                     r.get("forced") or "-", r["text"], r["match"],
                     f"{sum(walls) / len(walls):.0f}" if walls else "-", r.get("held") or "-"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        for n, ev in enumerate(grid["rows"][i - 1].get("evidence") or [] if i else [], 1):
            lines.append(f"    run {n} {ev.get('outcome', '?')}: {evidence_text(ev)}")
    text = "\n".join(lines)
    clusters = grid.get("clusters") or []
    if clusters:
        text += "\n" + "\n".join(
            f"cluster {c['cluster']}: {c['wall_s']:.0f}s, of which {c['runs']} runs "
            f"{c['runs_s']:.0f}s and set-up and stop {c['setup_s']:.0f}s" for c in clusters)
    return text + "\n" + LEGEND


def write_known_bug_grid(grid: dict, path: Path, meta: dict) -> Path:
    """``OUT/known-bugs.json`` (docs/formats.md)."""
    return write_json(path, KNOWN_BUGS_FORMAT, {**meta, **grid}, indent=True)


def read_known_bug_grid(path: Path) -> dict:
    return read_json(path, KNOWN_BUGS_FORMAT)
