"""`verifier selftest RUN_DIR`: inject each anomaly (and legal near misses) into copies of
a recorded run and show whether the checks catch each with the right kind and place."""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson

from verifier.cli.helptext import HelpFormatter, epilog


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "selftest",
        help="mutate copies of a recorded run, one anomaly or near miss each, and show "
        "that the checks catch every anomaly with no false alarm",
        epilog=epilog(
            ("verifier selftest runs/ack-loss/<run> --seed 1", "every mutation on copies of "
             "the run"),
            ("verifier selftest runs/ack-loss/<run> --only lost,reorder --keep /tmp/st",
             "two mutations, keeping a copy that fails")),
        formatter_class=HelpFormatter,
    )
    p.add_argument("run_dir", type=Path, help="runs/<scenario>/<timestamp>")
    p.add_argument("--seed", type=int, default=0, help="picks the targets (same seed, same copies)")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="keep each copy whose row fails here, for a bug report")
    p.add_argument("--only", default=None, metavar="NAMES",
                   help="comma-separated mutation names (default: all)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help="also write the result as JSON")
    p.add_argument("--spark-master", default=None,
                   help="Spark master URL (default $SPARK_MASTER or local[2])")
    p.set_defaults(func=cmd_selftest)


def cmd_selftest(args: argparse.Namespace) -> int:
    """Exit 0: every anomaly detected, no false alarm; 1 otherwise; 2: unreadable run."""
    from streaming.session import session_running, spark_session
    from verifier.judge.checks.load import read_run_files
    from verifier.judge.selftest import selftest

    read_run_files(args.run_dir)  # a run that cannot be read exits 2 before Spark starts
    ours = not session_running()
    spark = spark_session(app_name="verifier-selftest", master=args.spark_master)
    try:
        only = set(args.only.split(",")) if args.only else None
        result = selftest(args.run_dir, seed=args.seed, keep=args.keep, spark=spark, only=only)
    finally:
        if ours:
            spark.stop()
    print(result.render())
    if args.json:
        args.json.write_bytes(orjson.dumps(result.as_json(), option=orjson.OPT_INDENT_2))
    return 0 if result.ok else 1
