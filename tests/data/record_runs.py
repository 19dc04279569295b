"""Record the small real runs under tests/data/runs/<scenario>/ (one per scenario).

    .venv/bin/python tests/data/record_runs.py [--scenario NAME ...]

Runs `verifier chaos --profile fixtures` (every scenario on the local 3-node cluster at a
sixth of the usual rate), then copies each run folder without what the judge never reads
(process logs, Spark checkpoints, the observer's progress files stay: selftest keeps them
consistent). Re-record when a format version changes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SKIP = ("logs", "checkpoints", "report.html", "junit.xml")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", action="append", default=[])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="record-runs-") as tmp:
        cmd = [str(ROOT / ".venv" / "bin" / "verifier"), "chaos", "--profile", "fixtures",
               "--seed", str(args.seed), "--out", tmp]
        for name in args.scenario:
            cmd += ["--scenario", name]
        rc = subprocess.run(cmd, cwd=ROOT).returncode
        if rc not in (0, 1):
            print(f"chaos exited {rc}: nothing recorded", file=sys.stderr)
            return rc
        for run in sorted(Path(tmp).glob("*/*/config.json")):
            src, dest = run.parent, HERE / "runs" / run.parent.parent.name
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*SKIP))
            print(f"recorded {dest.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
