"""After the batch checks: the observer's live result compared with them (issue 16).

Reads what the live checks wrote (streaming.live: the anomalies files, the last state
and the observation files after it) and hands it to
:func:`verifier.judge.checks.crosscheck.compare`; a difference makes the columns
concerned UNKNOWN. A run whose observer ran without live checks is not compared, and
says so.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

import pyarrow as pa

from verifier.judge.checks.crosscheck import compare, mark_disagreement
from verifier.judge.checks.derive import Derived
from verifier.judge.model import ISOLATIONS, RunData


def live_result(run: RunData, run_dir: Path | str) -> tuple[pa.Table, dict] | None:
    """Every live anomaly at both levels and each level's final state; None without
    live checks at some level."""
    from streaming.live import final

    topics = {pid: p.topic for pid, p in run.config.producers.items()}
    tables, summaries = [], {}
    for iso in ISOLATIONS:
        got = final(Path(run_dir), iso, run.config.sink, run.config.run, topics)
        if got is None:
            return None
        live, rows = got
        tables.append(rows)
        summaries[iso] = live
    return pa.concat_tables(tables), summaries


def cross_check(run: RunData, d: Derived, doc: dict, run_dir: Path | str, cap: int) -> None:
    """Put ``live`` and ``live_vs_batch`` into ``doc``; mark disagreeing columns."""
    start = time.perf_counter()
    try:
        got = live_result(run, run_dir)
        if got is None:
            doc["live_vs_batch"] = {"compared": False, "agree": True,
                                    "reason": "the observer ran without live checks"}
            return
        rows, states = got
        doc["live"] = {iso: live.summary() for iso, live in states.items()}
        section = compare(run, d, rows, cap, states)
    except Exception as exc:  # noqa: BLE001 - a crashed comparison leaves the verdict open
        section = {"compared": False, "agree": False, "n_differ": 0, "differ": [],
                   "modes": sorted({c["mode"] for c in doc["columns"]}),
                   "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-4000:]}  # fmt: skip
    section["seconds"] = round(time.perf_counter() - start, 3)
    mark_disagreement(doc, section)


def live_at_drain(run_dir: Path | str) -> dict | None:
    """The live result right after the drain, before the batch checks: the stream kinds
    the observer found, plus lost and unseen from its final state and the histories, per
    column judged by the expectation table; None without live checks. No Spark."""
    from streaming.live import final
    from verifier.judge.checks import history as H
    from verifier.judge.checks.load import read_run_files
    from verifier.judge.definitions.stream import missing
    from verifier.judge.model import OBSERVER
    from verifier.orchestration.live import judge_counts

    start = time.perf_counter()
    files = read_run_files(run_dir)
    cfg = files.config
    topics = {pid: p.topic for pid, p in cfg.producers.items()}
    # a commit of unknown outcome is settled by the readers in the batch pass; here its
    # records are not required (never a false lost)
    sends = H.sends(H.attempts(files.history), H.txn_status(H.txn_flags(files.history), set()),
                    topics)
    summaries = {}
    for iso in ISOLATIONS:
        got = final(Path(run_dir), iso, cfg.sink, cfg.run, topics)
        if got is None:
            return None
        live, rows = got
        found = rows.to_pylist() + missing(
            live, sends, lambda t, p, iso=iso: files.drain.incomplete(t, p, OBSERVER, iso))
        by: dict[str, dict[str, int]] = {}
        for a in found:
            owner = a["pid"] if a["pid"] in topics else f"topic:{a['topic']}"
            by.setdefault(owner, {})[a["kind"]] = by.get(owner, {}).get(a["kind"], 0) + 1
        summaries[iso] = {"anomalies": by}
    cols = judge_counts(summaries, list(cfg.producers.values()), cfg.sink)
    return {"seconds": round(time.perf_counter() - start, 3),
            "forbidden": {c.name: c.forbidden for c in cols if c.forbidden},
            "line": "; ".join(c.line() for c in cols)}  # fmt: skip
