"""`verifier shrink RUN_DIR`: the smallest fault schedule and workload that still FAIL
the same way (docs/shrink.md)."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from verifier.cli.chaos import run_count
from verifier.cli.helptext import HelpFormatter, examples
from verifier.rundata.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    from verifier.cli.chaos import DEFAULT_STATE

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
    p.add_argument("--base-port", type=int, default=9700,
                   help="local cluster ports, as for chaos")
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE, metavar="DIR",
                   help="the local cluster's folder")
    p.set_defaults(func=cmd_shrink)




def cmd_shrink(args: argparse.Namespace) -> int:
    from verifier.cli import build_parser
    from verifier.cli.chaos import (
        LEDGERS,
        _prepare,
        _rerun_in_namespace,
        _stop_on_signals,
        cleanup,
    )
    from verifier.harness.procs import activate_ledger, release_ledger
    from verifier.orchestration.scenario import parse_duration
    from verifier.orchestration.shrink_plan import chaos_argv, load_failed_run, scenario_toml

    budget = parse_duration(args.budget)
    failed = load_failed_run(args.run_dir, args.column, args.kind)
    out = args.out or args.run_dir / "shrink"
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    original = out / "original.toml"
    original.write_text(scenario_toml(failed.spec, [f"the scenario of {failed.run_dir}"]))
    chaos = build_parser().parse_args(
        ["chaos", *chaos_argv(failed.config, original), "--base-port", str(args.base_port),
         "--state-dir", str(args.state_dir), "--out", str(out / "runs")])
    chaos.argv = args.argv
    previous = _stop_on_signals()
    try:
        prepared = _prepare(chaos)  # the same checks as the chaos run: 64 or 2 here
        cleanup()
        activate_ledger(LEDGERS)
        try:
            if prepared is None:  # network partitions: this command in its own namespace
                return _rerun_in_namespace(args)
            return _shrink(args, failed, prepared, out, budget)
        finally:
            release_ledger()
    finally:
        import signal

        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _shrink(args, failed, prepared, out: Path, budget: float) -> int:
    from streaming.session import spark_session
    from verifier.harness.procs import STOPPING
    from verifier.orchestration.shrink import Shrinker, describe
    from verifier.orchestration.shrink_runner import STOPPED, ChaosRunner, write_outputs
    from verifier.rundata.layout import RunLayout

    _profile, _scenarios, env, opts = prepared
    print(f"shrink {failed.run_dir}: {failed.fingerprint} | {describe(failed.spec)} | "
          f"budget {budget / 60:.0f} min | output {out}", flush=True)
    spark: Future = Future()

    def start_spark() -> None:  # as `verifier chaos` does: beside the cluster's start
        try:
            spark.set_result(spark_session(app_name="verifier-shrink",
                                           master=opts.spark_master,
                                           log_file=RunLayout(out).spark_log))
        except BaseException as exc:  # noqa: BLE001 - raised where the session is used
            spark.set_exception(exc)

    threading.Thread(target=start_spark, name="verifier-spark", daemon=True).start()
    t0 = time.monotonic()
    with (out / "runs.log").open("a") as log:
        try:
            with env:
                runner = ChaosRunner(env, opts, spark, out, failed.spec["name"],
                                     failed.fingerprint.column, log)
                result = Shrinker(failed.spec, failed.fingerprint, runner, budget_s=budget,
                                  est_run_s=failed.seconds, calibrate=args.calibrate,
                                  confirm=args.confirm, column_modes=failed.column_modes,
                                  say=lambda line: print(line, flush=True)).shrink()
        finally:
            if not STOPPING.is_set() and spark.done() and spark.exception() is None:
                spark.result().stop()
    paths = write_outputs(result, failed, out)
    print(paths["report"].read_text(), end="")
    hits, n = result.confirmed_rate()
    print(f"\nshrink: {STOPPED[result.stopped]}; {result.runs} runs in "
          f"{(time.monotonic() - t0) / 60:.1f} min; {describe(failed.spec)} -> "
          f"{describe(result.best)}; reproduces {hits}/{n}")
    print(f"shrunk scenario: {paths['scenario']}  |  report: {paths['report']}")
    if result.stopped in ("too-rare", "not-reproduced"):
        print(f"shrink: the original reproduced in {hits}/{n} runs: too rarely to shrink "
              "within the budget (a larger --budget, or more --calibrate runs)",
              file=sys.stderr)
        return 2
    return 0
