#!/usr/bin/env python3
"""`verifier explore`'s benchmark (issue 51): time to the first finding per affected row of
the known-bugs grid, the median of three seeds, and trials tried per minute.

Each (row, seed) is one `verifier explore --first` call in a folder of its own: it stops at
its first finding, unshrunk, so the time is the search's, not the shrink's. The order of
the trials does not depend on the seed; the seeds change which transactions abort, so the
median measures how often a cell's run exposes its bug.

    .venv/bin/python benchmarks/explore_bench.py --out /tmp/explore-bench [--seeds 1,2,3]
        [--rows 3.5.2-kafka-python,4.1.1-java3.9.1-endtxn,3.6.2-copier,4.1.1-markers]

Runs one call at a time (each starts its own local cluster); prints a line per call and a
table at the end, and writes OUT/bench.json. Quote the table in docs/benchmarks.md with
its date and command.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: the affected rows of issue 51's "Prove it": (name, explore arguments, its budget, the
#: known bug its finding should be named)
ROWS: dict[str, tuple[list[str], str, str]] = {
    "3.5.2-kafka-python": (["--kafka-version", "3.5.2", "--client", "kafka-python"],
                           "15m", "KAFKA-14402"),
    "4.1.1-java3.9.1-endtxn": (["--kafka-version", "4.1.1", "--client", "java:3.9.1",
                                "--requests", "endtxn"], "12m", "KAFKA-17754"),
    "3.6.2-copier": (["--kafka-version", "3.6.2", "--client", "kafka-python",
                      "--requests", "txnoffsetcommit"], "20m", "KAFKA-15449"),
    "4.1.1-markers": (["--kafka-version", "4.1.1", "--client", "java:4.1.1",
                       "--requests", "writetxnmarkers"], "20m", "KAFKA-19446"),
}


def one(row: str, seed: int, out: Path) -> dict:
    args, budget, bug = ROWS[row]
    folder = out / f"{row}-s{seed}"
    cmd = [str(Path(sys.executable).parent / "verifier"), "explore", *args, "--budget",
           budget, "--first", "--seed", str(seed), "--out", str(folder)]
    t0 = time.monotonic()
    with (out / f"{row}-s{seed}.log").open("w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.monotonic() - t0
    ledger = json.loads((folder / "explore.json").read_text()) if (
        folder / "explore.json").exists() else {}
    findings = ledger.get("findings") or {}
    trials = ledger.get("trials") or {}
    first = min(findings.values(), key=lambda f: float(f.get("found_after_s") or 0),
                default=None)
    named = sorted({k["bug"] for f in findings.values() for k in f.get("known") or ()})
    return {"row": row, "seed": seed, "rc": rc, "wall_s": round(wall, 1),
            "trials": len(trials), "first_s": first and first.get("found_after_s"),
            "first": first and first.get("text"), "named": named, "expected": bug,
            "command": " ".join(cmd)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--rows", default=",".join(ROWS))
    a = p.parse_args()
    rows = [r.strip() for r in a.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        p.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    seeds = [int(s) for s in a.seeds.split(",")]
    a.out.mkdir(parents=True, exist_ok=True)
    results = []
    for row in rows:
        for seed in seeds:
            r = one(row, seed, a.out)
            results.append(r)
            print(f"{row} seed {seed}: exit {r['rc']}, {r['trials']} trials in "
                  f"{r['wall_s'] / 60:.1f} min; first finding "
                  + (f"after {r['first_s'] / 60:.1f} min: {r['first']} "
                     f"(named {', '.join(r['named']) or 'nothing'})" if r["first_s"]
                     else "none"), flush=True)
            (a.out / "bench.json").write_text(json.dumps(results, indent=1))
    print(f"\n{'row':<24} {'expected':<12} {'found (seeds)':<14} {'median first':<13} "
          "trials/min")
    for row in rows:
        rs = [r for r in results if r["row"] == row]
        found = [r for r in rs if r["first_s"] and r["expected"] in r["named"]]
        med = (f"{statistics.median(r['first_s'] for r in found) / 60:.1f} min"
               if len(found) * 2 > len(rs) else "-")
        per_min = sum(r["trials"] for r in rs) / max(sum(r["wall_s"] for r in rs) / 60, 1e-9)
        print(f"{row:<24} {ROWS[row][2]:<12} {len(found)}/{len(rs):<12} {med:<13} "
              f"{per_min:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
