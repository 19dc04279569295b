"""``verifier chaos --retry-not-exercised N``: a policy for NOT EXERCISED that CI can choose
(issue 49, docs/ci.md).

A fault that missed a column (a trigger that never came, a kill between batches) leaves
that cell NOT EXERCISED and the run exiting 3: nothing was shown either way. With this
flag a run that would exit 3 re-runs only the scenarios that hold such a cell, each as
many times as it has NOT EXERCISED outcomes, each attempt with seeds of its own (its
faults fall elsewhere) in ``OUT/retry-<k>/``, up to N times; each NOT EXERCISED outcome is
replaced by its re-run's. A missed fault then does not turn a healthy change red, and a
FAIL on a re-run still fails it. Both attempts are reported: a table on the terminal,
``OUT/retries.json``, and every re-run cell's ``attempts`` in the matrix's
``verdict.json`` and in its junit.xml test case. The first attempt's matrix document is
kept as ``OUT/verdict-attempt-1.json``.

A run whose worst is FAIL or UNKNOWN exits as it did: re-running cannot make it better.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from verifier.rundata.vocab import EXIT_NOT_EXERCISED, NOT_EXERCISED

#: each attempt's seeds start this far from the last one's, so no re-run repeats a
#: schedule of the first attempt (whose --repeat N runs take seeds SEED..SEED+N-1)
SEED_STRIDE = 1000


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of re-runs, 0 or more: "
                                         f"{text!r}")
    return n


def add_flag(parser: argparse.ArgumentParser) -> None:
    """The ``--retry-not-exercised N`` option of ``verifier chaos``."""
    parser.add_argument(
        "--retry-not-exercised", type=_count, default=0, metavar="N",
        help="when the run would exit 3 (a fault missed a column: NOT EXERCISED), re-run "
             "only the scenarios holding such a cell, up to N times, each NOT EXERCISED "
             "outcome replaced by its re-run's; every attempt is reported "
             "(OUT/retries.json, OUT/retry-<k>/) and the exit code follows the last")


def run_with_retries(run, args: argparse.Namespace, prepared: tuple, out=sys.stdout) -> int:
    """``run(args, *prepared)`` and, when it exits 3 and ``--retry-not-exercised N`` asks,
    the re-runs of what was not exercised. Returns the exit code of the outcomes kept.
    ``run`` appends every run's finished document to ``args.collect``
    (verifier.cli.chaos._run); afterwards ``args.collect`` holds the documents kept."""
    args.collect = []
    code = run(args, *prepared)
    limit = getattr(args, "retry_not_exercised", 0) or 0
    if not limit or code != EXIT_NOT_EXERCISED:
        return code
    profile, scenarios, env, opts = prepared
    root = Path(opts.out)
    first = args.collect
    shutil.copyfile(root / "verdict.json", root / "verdict-attempt-1.json")
    merged, attempts = copy.deepcopy(first), [{"attempt": 1, "out": ".", "exit_code": code,
                                              "seed": opts.seed}]
    for k in range(1, limit + 1):
        todo = pending(merged)
        if not todo:
            break
        wanted = [s for s in scenarios if s.name in todo]
        seed = opts.seed + k * SEED_STRIDE
        print(f"\n=== NOT EXERCISED: re-run {k} of up to {limit} (--retry-not-exercised): "
              f"{', '.join(f'{s.name} x{todo[s.name]}' for s in wanted)}, seed {seed}, "
              f"output {root / f'retry-{k}'}", file=out, flush=True)
        retry_opts = replace(opts, out=root / f"retry-{k}", seed=seed,
                             repeat=max(todo[s.name] for s in wanted))
        args.collect = []
        attempt_code = run(args, profile, wanted, env, retry_opts)
        merge(merged, args.collect, k + 1)
        attempts.append({"attempt": k + 1, "out": f"retry-{k}", "exit_code": attempt_code,
                         "seed": seed, "scenarios": [s.name for s in wanted]})
    final = _write(merged, attempts, root, limit)
    print(render_attempts(merged, code, final), file=out, flush=True)
    args.collect = merged
    return final


def pending(docs: list[dict]) -> dict[str, int]:
    """scenario -> how many runs a re-run of it needs: the most NOT EXERCISED outcomes
    any one of its cells holds."""
    counts: dict[tuple[str, str], int] = {}
    for doc in docs:
        for c in doc["columns"]:
            if c["verdict"] == NOT_EXERCISED:
                key = (doc["scenario"], c["name"])
                counts[key] = counts.get(key, 0) + 1
    out: dict[str, int] = {}
    for (scenario, _), n in counts.items():
        out[scenario] = max(out.get(scenario, 0), n)
    return out


def merge(docs: list[dict], rerun: list[dict], attempt: int) -> None:
    """Replace, in run order, each NOT EXERCISED column of ``docs`` by the same cell of
    the next run of ``rerun`` (attempt ``attempt``), recording every attempt's outcome in
    the column's ``attempts``, and the cell's comparison with its advice by the re-run's;
    a cell the re-run did not report stays as it was."""
    queue: dict[tuple[str, str], list[tuple[dict, dict]]] = {}
    for d in rerun:
        for c in d["columns"]:
            queue.setdefault((d["scenario"], c["name"]), []).append((d, c))
    for doc in docs:
        for i, col in enumerate(doc["columns"]):
            waiting = queue.get((doc["scenario"], col["name"]))
            if col["verdict"] != NOT_EXERCISED or not waiting:
                continue
            run_doc, again = waiting.pop(0)
            new = copy.deepcopy(again)
            new["attempts"] = col.get("attempts") or [attempt_line(1, doc, col)]
            new["attempts"].append(attempt_line(attempt, run_doc, again))
            doc["columns"][i] = new
            if "advice_check" in doc:
                kept = [r for r in doc["advice_check"] if r.get("column") != col["name"]]
                doc["advice_check"] = kept + [r for r in run_doc.get("advice_check") or []
                                              if r.get("column") == again["name"]]


def attempt_line(attempt: int, doc: dict, col: dict) -> str:
    """``attempt 2: PASS (runs/ci/retry-1/ack-loss/...)``, NOT EXERCISED with its reasons."""
    why = "; ".join(col.get("not_exercised") or [])
    return (f"attempt {attempt}: {col['verdict']}" + (f": {why}" if why else "")
            + f" ({doc.get('run_dir') or doc.get('run')})")


def _write(docs: list[dict], attempts: list[dict], root: Path, limit: int) -> int:
    """The matrix outputs again from the kept outcomes, and OUT/retries.json; returns the
    exit code of the kept outcomes (a forbidden connection finding, a self-test that did
    not hold in any attempt keep their 1 and 2, as ``run_matrix`` decides them)."""
    from verifier.assess.exitcodes import of_matrix
    from verifier.assess.outputs import write_matrix

    # the first attempt's matrix header (profile, seed, environment), its runs replaced
    meta = {k: v for k, v in json.loads((root / "verdict.json").read_text()).items()
            if k not in ("format", "version", "grid", "runs", "workloads", "exit_code")}
    meta["retries"] = {"retry_not_exercised": limit, "attempts": attempts}
    code, _ = of_matrix(write_matrix(docs, root, meta), docs)
    cells = [{"scenario": d["scenario"], "column": c["name"], "attempts": c["attempts"],
              "kept": c["verdict"]} for d in docs for c in d["columns"] if c.get("attempts")]
    (root / "retries.json").write_text(json.dumps(
        {"format": "retries", "version": 1, "retry_not_exercised": limit,
         "attempts": attempts, "cells": cells, "exit_code": code}, indent=1) + "\n")
    return code


def render_attempts(docs: list[dict], before: int, after: int) -> str:
    """Every re-run cell with each attempt's outcome, and the exit codes before and after."""
    lines = ["\n=== NOT EXERCISED cells and their re-runs (--retry-not-exercised)"]
    for d in docs:
        for c in d["columns"]:
            if c.get("attempts"):
                lines.append(f"{d['scenario']} / {c['name']}: kept {c['verdict']}")
                lines += [f"    {a}" for a in c["attempts"]]
    lines.append(f"exit code {after} ({before} before the re-runs); every attempt in "
                 "retries.json")
    return "\n".join(lines)
