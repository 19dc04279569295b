"""`verifier shrink RUN_DIR`: the smallest fault schedule and workload that still FAIL
the same way (docs/shrink.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verifier import api
from verifier.cli.chaos import run_count
from verifier.cli.helptext import HelpFormatter, examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("shrink", help="re-run a FAILed run with fewer faults and a smaller "
                                      "workload; write the smallest scenario that still "
                                      "FAILs the same way",
                       description="Re-run a FAILed chaos run's scenario (same environment, "
                                   "client, versions, pipelines, producer config, seed) with "
                                   "candidate schedules and keep a candidate only when it "
                                   "FAILs the same column with the same forbidden anomaly "
                                   "kind. Writes OUT/shrunk.toml (runs with `verifier chaos "
                                   "--scenario`), OUT/shrink.md and OUT/shrink.json.",
                       epilog="exit codes: 0 a scenario written (shrunk, or the original if "
                              "nothing could go); 2 the FAIL does not reproduce often enough "
                              "to shrink, or the run could not start; 64 usage error; 130 "
                              "interrupted. docs/shrink.md\n\n" + examples(
                                  ("verifier shrink runs/ack-loss/<run>", "the smallest "
                                   "scenario that still FAILs (30 minutes at most)"),
                                  ("verifier shrink runs/ack-loss/<run> --column "
                                   "idempotent --budget 10m --calibrate 1 --confirm 1",
                                   "one column, a tighter budget")),
                       formatter_class=HelpFormatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                   help="a FAILed scenario run's folder (printed under its FAIL)")
    p.add_argument("--column", default=None, metavar="C",
                   help="the FAILed column to keep failing (default: the run's first)")
    p.add_argument("--kind", default=None, metavar="KIND",
                   help="its forbidden anomaly kind (default: the column's first)")
    p.add_argument("--budget", default="30m", metavar="30m",
                   help="wall time for every run, calibration and confirmation included "
                        "(s, m, h)")
    p.add_argument("--calibrate", type=run_count(), default=3, metavar="N",
                   help="runs of the original that measure its reproduction rate")
    p.add_argument("--confirm", type=run_count(), default=3, metavar="N",
                   help="runs of the shrunk scenario that measure its rate")
    p.add_argument("--out", type=Path, default=None,
                   help="output folder (default RUN_DIR/shrink)")
    p.add_argument("--base-port", type=int, default=api.DEFAULT_BASE_PORT,
                   help="local cluster ports, as for chaos")
    p.add_argument("--state-dir", type=Path, default=api.DEFAULT_STATE, metavar="DIR",
                   help="the local cluster's folder")
    p.set_defaults(func=cmd_shrink)


def cmd_shrink(args: argparse.Namespace) -> int:
    job = api.plan_shrink(args.run_dir, column=args.column, kind=args.kind,
                          budget=args.budget, calibrate=args.calibrate, confirm=args.confirm,
                          out=args.out, base_port=args.base_port, state_dir=args.state_dir)
    # the same checks as the chaos run (64 or 2 here); network partitions: this command
    # again in its own namespace
    return api.run_prepared(job.request, args.argv, lambda prepared: _shrink(job, prepared))


def _shrink(job: api.ShrinkJob, prepared: api.Prepared) -> int:
    from verifier.orchestration.shrink_runner import STOPPED
    from verifier.orchestration.shrink_specs import describe

    found = api.shrink(job, prepared, say=lambda line: print(line, flush=True))
    result = found.result
    print(found.paths["report"].read_text(), end="")
    hits, n = result.confirmed_rate()
    print(f"\nshrink: {STOPPED[result.stopped]}; {result.runs} runs in "
          f"{found.seconds / 60:.1f} min; {describe(job.failed.spec)} -> "
          f"{describe(result.best)}; reproduces {hits}/{n}")
    print(f"shrunk scenario: {found.paths['scenario']}  |  report: {found.paths['report']}")
    if not found.reproduced:
        print(f"shrink: the original reproduced in {hits}/{n} runs: too rarely to shrink "
              "within the budget (a larger --budget, or more --calibrate runs)",
              file=sys.stderr)
        return 2
    return 0
