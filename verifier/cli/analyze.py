"""`verifier analyze RUN_DIR` and `verifier report RUN_DIR`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verifier.cli.helptext import HelpFormatter, epilog
from verifier.rundata.errors import UsageError
from verifier.rundata.layout import RunLayout


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="re-run every check offline on a finished run and "
        "write verdict.json, junit.xml, report.html",
        epilog=epilog(
            ("verifier analyze runs/ack-loss/<run>", "verdict.json, junit.xml, report.html "
             "into the run folder"),
            ("verifier analyze runs/ack-loss/<run> --out /tmp/again --sample 100",
             "elsewhere, keeping more anomalies per kind"),
            ("verifier analyze runs/ack-loss/<run> --spark-conf spark.driver.memory=4g",
             "a long run: more driver memory")),
        formatter_class=HelpFormatter,
    )
    p.add_argument("run_dir", type=Path, help="runs/<scenario>/<timestamp>")
    p.add_argument(
        "--spark-master", default=None, help="Spark master URL (default $SPARK_MASTER or local[2])"
    )
    p.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting, repeatable (e.g. spark.driver.memory=4g)",
    )
    p.add_argument("--sample", type=int, default=20, help="anomalies kept per kind and mode")
    p.add_argument("--out", type=Path, default=None, help="output folder (default RUN_DIR)")
    p.set_defaults(func=cmd_analyze)
    q = sub.add_parser(
        "report",
        help="re-render junit.xml, report.html and the terminal table from a run's verdict.json",
        epilog=epilog(
            ("verifier report runs/ack-loss/<run>", "report.html and junit.xml again, the "
             "table printed (no Spark)"),
            ("verifier report runs/<chaos-out> --format markdown", "a chaos run's matrix as "
             "markdown, for a pull request comment"),
            ("verifier report runs/ack-loss/<run> --out /tmp/report", "write elsewhere")),
        formatter_class=HelpFormatter,
    )
    q.add_argument("run_dir", type=Path)
    q.add_argument("--out", type=Path, default=None, help="output folder (default RUN_DIR)")
    q.add_argument("--format", choices=("text", "markdown"), default="text",
                   help="what to print: the terminal table (default) or markdown for a pull "
                        "request comment; RUN_DIR may also be a chaos output folder (its "
                        "matrix with the per-mode summary)")
    q.set_defaults(func=cmd_report)


def _conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--spark-conf expects KEY=VALUE, got {pair!r}")
        conf[key] = value
    return conf


def cmd_analyze(args: argparse.Namespace) -> int:
    from verifier import api
    from verifier.assess.facts import interrupted
    from verifier.report import render_terminal

    conf = _conf(args.spark_conf)
    reason = interrupted(args.run_dir)
    if reason is not None:  # said first: the run's files may be cut short
        print(f"run interrupted: {reason}; not a complete run, no column can PASS",
              flush=True)
    done = api.analyze_run(args.run_dir, out=args.out, sample=args.sample,
                           spark_master=args.spark_master, spark_conf=conf)
    print(render_terminal(done.doc))
    print("wrote " + ", ".join(str(p) for p in done.paths), file=sys.stderr)
    return done.exit_code


def cmd_report(args: argparse.Namespace) -> int:
    from verifier.report import read_verdict, render_terminal, write_html, write_junit
    from verifier.report.markdown import matrix_md, run_md
    from verifier.rundata.formats import read_json

    path = RunLayout(args.run_dir).verdict
    matrix = _matrix_doc(path)
    if matrix is not None:  # a chaos output folder: print its matrix, re-render nothing
        if args.format == "markdown":
            print(matrix_md(read_json(path, "chaos-matrix")))
        else:
            from verifier.report.compare import render_summary, summary
            from verifier.report.terminal import render_grid
            print(render_grid(matrix["grid"], matrix.get("runs")))
            print(render_summary(summary(matrix.get("runs") or [], matrix.get("workloads"))))
        return matrix.get("exit_code", 2)
    doc = read_verdict(path)
    out = args.out or args.run_dir
    write_junit([doc], RunLayout(out).junit)
    write_html(doc, RunLayout(out).report)
    print(run_md(doc) if args.format == "markdown" else render_terminal(doc))
    return doc["exit_code"]


def _matrix_doc(path: Path) -> dict | None:
    """The chaos matrix document at ``path``, or None if it is anything else."""
    import orjson

    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == "chaos-matrix" else None
