"""Record the small real runs under tests/data/runs/<scenario>/ (one per scenario).

    .venv/bin/python tests/data/record_runs.py [--scenario NAME ...]

Runs `verifier chaos --profile fixtures` (every scenario on the local 3-node cluster at a
sixth of the usual rate), then copies each run folder without what the judge never reads
(process logs, Spark checkpoints) and without the outputs `verifier analyze` derives again
(verdict.json, junit.xml, report.html). The observer's progress files stay: selftest keeps
them consistent. Re-record when a format version changes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SKIP = ("logs", "checkpoints", "connections.jsonl", "report.html", "junit.xml", "verdict.json",
        # a pipeline's checkpoints and sink output: the judge reads what was read back
        # (pipelines/<name>/output.parquet, readback.json)
        "checkpoint", "checkpoint.lost-*", "output")
#: the pipelines the pipeline scenarios (profile pipelines) are recorded with: at-least-once
#: sinks, so that every column passes also under checkpoint-lost
PIPELINES = "kafka-sink,foreach-batch"
PIPELINE_SCENARIOS = {"pipeline-restart", "checkpoint-lost"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", action="append", default=[])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", default="fixtures",
                    help="fixtures (default); idle-connections is recorded with full, as its "
                         "load is already one record per 8 s")
    ap.add_argument("--out", type=Path, default=None,
                    help="keep the whole runs here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="record-runs-") as tmp:
        out = args.out or Path(tmp)
        from verifier.orchestration.scenario import available

        names = args.scenario or available()
        # the pipeline scenarios run apart, with their pipelines; the others without any
        rc = 0
        for group, extra in ((sorted(set(names) - PIPELINE_SCENARIOS), []),
                             (sorted(set(names) & PIPELINE_SCENARIOS),
                              ["--pipeline", PIPELINES])):
            if not group:
                continue
            cmd = [sys.executable, "-m", "verifier", "chaos", "--profile", args.profile,
                   "--seed", str(args.seed), "--out", str(out), *extra]
            for name in group:
                cmd += ["--scenario", name]
            rc = max(rc, subprocess.run(cmd, cwd=ROOT).returncode)
        recorded = 0
        for run in sorted(out.glob("*/*/config.json")):
            src, dest = run.parent, HERE / "runs" / run.parent.parent.name
            # a run is worth keeping when its data is complete; its verdict is derived again
            if not (src / "drain.json").is_file() or not orjson.loads(
                    (src / "drain.json").read_bytes()).get("completed"):
                print(f"not recorded (drain incomplete): {src}", file=sys.stderr)
                continue
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*SKIP))
            recorded += 1
            print(f"recorded {dest.relative_to(ROOT)}")
    print(f"chaos exited {rc}; {recorded} runs recorded")
    return 0 if recorded else 2


if __name__ == "__main__":
    sys.exit(main())
