"""Markdown renderings (``verifier report --format markdown``): the matrix and its
"delivered guarantees" summary, or one run's side-by-side table, for a CI job to post on
a pull request."""

from __future__ import annotations

from verifier.report.compare import (
    CELL_LEGEND,
    MECHANISM,
    REPEAT_LEGEND,
    cells,
    load_text,
    summary,
    where_text,
)
from verifier.report.selftest import selftest_markdown
from verifier.report.terminal import LEGEND, table_rows

_EXIT = {0: "every mode kept its promise", 1: "a mode broke its promise",
         2: "a run could not be completed or verified"}


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|")


def _table(rows: list[list[str]]) -> str:
    head, *body = rows
    out = ["| " + " | ".join(_esc(c) for c in head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in body]
    return "\n".join(out)


def summary_md(docs: list[dict], workloads: dict[str, dict] | None = None) -> str:
    """The "delivered guarantees" table: kinds as rows, modes as columns, then the
    mechanism of every kind that was observed."""
    entries = summary(docs, workloads)
    if not entries:
        return ""
    kinds = [k for k in entries[0]["kinds"]]
    for e in entries[1:]:
        kinds += [k for k in e["kinds"] if k not in kinds]
    rows = [["", *[e["column"] for e in entries]]]
    loads = []
    for e in entries:
        base = next((x for x in e["load"] if x["scenario"] == "baseline"), None)
        loads.append(load_text(base) if base else "-")
    if any(x != "-" for x in loads):
        rows.append(["load (baseline)", *loads])
    seen = []
    for k in kinds:
        row = [f"[{k}](#why-{k})"]
        for e in entries:
            kind = e["kinds"].get(k)
            row.append(where_text(kind) if kind else "-")
            if kind and kind["count"] and k not in seen:
                seen.append(k)
        rows.append(row)
    parts = ["### Delivered guarantees, per mode across the scenarios", "", _table(rows), "",
             "x forbidden (fails the mode), ~ tolerated, + expected, ? leaves the verdict "
             "open"]
    if seen:
        parts += ["", "### Why these happen", ""]
        for k in seen:
            title, text, source = MECHANISM[k]
            parts += [f'<a id="why-{k}"></a>**{title}** ({k}). {text} *Source: {source}.*', ""]
    return "\n".join(parts).rstrip() + "\n"


def matrix_md(matrix: dict) -> str:
    """A chaos matrix document (OUT/verdict.json): grid with cells, then the summary."""
    grid, docs = matrix["grid"], matrix.get("runs") or []
    detail = cells(docs)
    rows = [["scenario", *grid["columns"]]]
    for sc in grid["scenarios"]:
        rows.append([sc, *[detail.get(sc, {}).get(c, {}).get("text")
                           or grid["grid"][sc].get(c, "-") for c in grid["columns"]]])
    code = matrix.get("exit_code", grid.get("exit_code"))
    head = f"## Delivery guarantees under faults: exit code {code} ({_EXIT.get(code, '?')})"
    legend = CELL_LEGEND + ("; " + REPEAT_LEGEND
                            if any(n > 1 for n in (grid.get("repetitions") or {}).values())
                            else "")
    return "\n".join([head, "", _table(rows), "", legend, "",
                      summary_md(docs, matrix.get("workloads"))]) + selftest_markdown(docs)


def run_md(doc: dict) -> str:
    """One run's verdict document: its side-by-side table, reasons and summary."""
    kafka = f"Kafka {doc['kafka_version']}, " if doc.get("kafka_version") else ""
    head = (f"## Delivery verdict: {doc['scenario']} (run {doc['run']}, sink {doc['sink']}, "
            f"{kafka}exit code {doc['exit_code']})")
    lines = [head, "", _table(table_rows(doc)), "", LEGEND]
    for c in doc["columns"]:
        for r in c["reasons"]:
            lines.append(f"- {c['name']}: UNKNOWN because {r}")
    return "\n".join(lines) + "\n\n" + summary_md([doc]) + selftest_markdown([doc])
