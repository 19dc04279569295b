"""The versions grid: Kafka version x client x mode, from the verdicts of the runs of a
``versions`` profile (one matrix per broker version, clients side by side).

Each row is one broker version, one client (with its version) and one scenario; each
column one delivery mode (at each isolation level for transactional); each cell the
column's verdict and what it observed, as in the scenario x mode grid (``~`` tolerated,
``+`` expected, ``x`` forbidden: it fails the mode, ``?`` leaves it open).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from verifier.report.compare import CELL_LEGEND, cells
from verifier.rundata.formats import RunFormatError, read_json, write_json
from verifier.rundata.layout import RunLayout
from verifier.rundata.nemesis import read_nemesis
from verifier.rundata.plan import plan_of

VERSIONS_FORMAT = "versions-grid"


def _client_of(doc: dict, col: dict) -> tuple[str, str]:
    """(client label with its version, the column's name without the client)."""
    named = {c.split()[0]: c for c in doc.get("clients") or []}
    mode = str(col.get("mode") or col["name"])
    if "/" in mode:  # several clients side by side: "transactional/java", ".../java:3.9.1"
        client = mode.split("/", 1)[1]
        label = (_column_clients(doc.get("run_dir")).get(client) or named.get(client)
                 or client.replace(":", " ", 1))
        return label, col["name"].replace(f"/{client}", "", 1)
    only = next(iter(named.values()), "kafka-python")
    return only, col["name"]


def _column_key(col: dict) -> str:
    """The key :func:`held_answers` files a column's client under (its producer id's
    client part: ``java-3.9.1`` for ``.../java:3.9.1``), ``""`` for a run of one client."""
    mode = str(col.get("mode") or col["name"])
    return mode.split("/", 1)[1].replace(":", "-") if "/" in mode else ""


@lru_cache(maxsize=64)
def _column_clients(run_dir: str | None) -> dict[str, str]:
    """Each side-by-side column's client suffix (``java:3.9.1``) and the client and
    version its generator ran (``java 3.9.1``), from the run's config.json."""
    plan = plan_of(run_dir) if run_dir else None
    out = {}
    for p in (plan.producers if plan is not None else {}).values():
        if "/" in p.mode:
            out[p.mode.split("/", 1)[1]] = (f"{p.client} {p.client_version}"
                                            if p.client_version else p.client)
    return out


def version_grid(entries: list[tuple[str, list[dict]]]) -> dict:
    """``entries``: (Kafka version, that version's run documents). Returns the grid as
    data: ``columns`` (mode columns, in first-seen order) and ``rows`` (``kafka``,
    ``client``, ``scenario``, ``cells``: column -> {verdict, text}); its exit code is
    :func:`verifier.assess.exitcodes.set_versions`'."""
    columns: list[str] = []
    rows: list[dict] = []
    for version, docs in entries:
        for doc in docs:
            detail = cells([doc]).get(doc["scenario"], {})
            by_client: dict[str, dict] = {}
            keys: dict[str, str] = {}
            for col in doc["columns"]:
                client, name = _client_of(doc, col)
                keys[client] = _column_key(col)
                if name not in columns:
                    columns.append(name)
                cell = detail.get(col["name"]) or {"verdict": col["verdict"]}
                by_client.setdefault(client, {})[name] = {
                    "verdict": cell["verdict"], "text": cell.get("text") or cell["verdict"]}
            late = held_answers(doc.get("run_dir"))
            for client, row in sorted(by_client.items()):
                rows.append({"kafka": version, "client": client, "scenario": doc["scenario"],
                             "cells": row, "run_dir": doc.get("run_dir"),
                             "held": late.get(keys[client], late.get("", "-"))})
    return {"columns": columns, "rows": rows}


def _error_name(code: int) -> str:
    import kafka.errors as errors

    name = errors.for_code(code).__name__
    return name.removesuffix("Error") if code else "none"


def held_answers(run_dir) -> dict[str, str]:
    """What the broker answered to each request a hold fault released late (the
    history's ``answer`` events), per client (``""``: the run's only one): Produce
    "accepted at 203" (written there now, or a retry the broker recognised by its
    sequence as the batch already written there) or "refused: InvalidTxnState", others
    their error; a request released once its transaction's marker was in the log (a hold's
    ``after_marker``) adds "after the abort marker at 202". Evidence beside
    the verdict, not a verdict: a late write the broker took may still be invisible at
    read_committed (it joined a transaction that aborted)."""
    if not run_dir:
        return {}
    try:
        ops = read_nemesis(RunLayout(Path(run_dir)).nemesis)
    except RunFormatError:
        return {}
    seen: dict[str, list[str]] = {}
    markers = {(op.get("detail") or {}).get("hold"): (op.get("detail") or {}).get("marker") or {}
               for op in ops if op.get("type") == "event" and op.get("f") == "marker"}
    for op in ops:
        if op.get("type") != "event" or op.get("f") != "answer":
            continue
        detail = op.get("detail") or {}
        if detail.get("gated"):  # a next request then_hold held back: not a late one
            continue
        request, response = detail.get("request") or {}, detail.get("response") or {}
        txn = str(request.get("transactional_id") or "")
        what = request.get("api", "?")
        if "partitions" in response:
            texts = [f"accepted at {offset}" if error == 0 and offset >= 0 else
                     f"refused: {_error_name(error)}"
                     for _, _, error, offset in response["partitions"]]
            marker = markers.get(detail.get("hold"))
            if marker:
                texts = [f"{t} after the {marker.get('marker')} marker at {marker.get('offset')}"
                         for t in texts]
        else:
            code = int(response.get("error_code", -1))
            texts = [f"{what} accepted" if code == 0 else f"{what} refused: {_error_name(code)}"]
        seen.setdefault(_client_key(txn), []).extend(texts)
    out = {}
    for key, texts in seen.items():
        counted = {t: texts.count(t) for t in dict.fromkeys(texts)}
        out[key] = ", ".join(t if n == 1 else f"{t} (x{n})" for t, n in counted.items())
    return out


def _client_key(txn: str) -> str:
    """The client named in a generator's transactional id ``<run>.transactional-<client>-0``
    (several clients side by side), else ``""``."""
    head, sep, pid = txn.rpartition(".")
    while sep and pid[:1].isdigit():  # a dot of a client version (java-3.9.1), not the run's
        head, sep, rest = head.rpartition(".")
        pid = f"{rest}.{pid}"
    parts = pid.split("-")
    return "-".join(parts[1:-1]) if len(parts) > 2 else ""


def render_version_grid(grid: dict) -> str:
    head = ["kafka", "client", "scenario", *grid["columns"], "held request, broker answered"]
    rows = [head]
    for r in grid["rows"]:
        rows.append([r["kafka"], r["client"], r["scenario"],
                     *[(r["cells"].get(c) or {}).get("text", "-") for c in grid["columns"]],
                     r.get("held") or "-"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    text = "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)
    return text + "\n" + CELL_LEGEND


def speaks_transaction_v2(client: str) -> bool:
    """Whether a client (``java 4.4.0``, ``kafka-python 3.0.12``) uses transaction version 2
    (KIP-890 part 2: an epoch bump per transaction, no AddPartitionsToTxn from the client)
    where the cluster runs at that level: the Java client from 4.0 does; kafka-python (3.0)
    and librdkafka (2.16) do not, on any cluster."""
    name, _, version = client.partition(" ")
    major = version.split(".")[0]
    return name == "java" and major.isdigit() and int(major) >= 4


def transaction_version_line(grid: dict) -> str:
    """One line under the versions grid: which of its clients ran transaction version 2,
    on which clusters (``grid["transaction_version"]``: each cluster's level as read after
    its start, 0 for a 3.x broker), and which never do."""
    levels = grid.get("transaction_version") or {}
    parts = []
    for client in sorted({r["client"] for r in grid["rows"]}):
        clusters = list(dict.fromkeys(r["kafka"] for r in grid["rows"] if r["client"] == client))
        if not speaks_transaction_v2(client):
            parts.append(f"{client} on none (the client does not speak it)")
            continue
        on = [k for k in clusters if levels.get(k, 0) >= 2]
        off = [f"{k} at level {levels.get(k, 0)}" for k in clusters if levels.get(k, 0) < 2]
        parts.append(f"{client} on {', '.join(on) or 'none'}"
                     + (f" (not on {', '.join(off)})" if off else ""))
    return "transaction version 2 (KIP-890 part 2): " + ("; ".join(parts) or "no client ran")


def write_version_grid(grid: dict, path: Path, meta: dict) -> Path:
    """``OUT/versions.json``: the grid with the profile's facts (docs/formats.md)."""
    return write_json(path, VERSIONS_FORMAT, {**meta, **grid}, indent=True)


def read_version_grid(path: Path) -> dict:
    return read_json(path, VERSIONS_FORMAT)
