"""Command line of the generator: ``python -m producers ...`` and ``verifier produce``.

Both call :func:`add_arguments` and :func:`run_from_args`, so they accept the same flags.
Exit codes (DESIGN §7): 0 a clean stop, 2 could not run (e.g. Kafka unreachable), 64
usage.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import orjson

from producers import config as cfg
from producers.generator import GeneratorSpec, run
from producers.properties import load_properties
from verifier.rundata.errors import UsageError, VerifierError

EXIT_OK, EXIT_CANNOT_RUN, EXIT_USAGE = 0, 2, 64


def _partitions(text: str) -> tuple[int, ...]:
    try:
        parts = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated partitions, got {text!r}") from None
    if not parts or min(parts) < 0:
        raise argparse.ArgumentTypeError(f"expected partitions >= 0, got {text!r}")
    return parts


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The generator's flags."""
    p.add_argument("--run-dir", type=Path, required=True, help="run folder (histories/ inside)")
    p.add_argument("--run-id", required=True, help="run id written into every record")
    p.add_argument("--mode", required=True, choices=cfg.MODES)
    p.add_argument("--pid", required=True, help="logical producer id, stable across restarts")
    p.add_argument("--topic", required=True, help="topic to write (the copier's output)")
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--partitions", type=_partitions, default=None,
                   help="partitions to write round robin, e.g. 0,1,2 (default: all)")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--count", type=int, help="new records this session, then stop")
    stop.add_argument("--duration", type=float, help="seconds, then stop")
    p.add_argument("--rate", type=float, default=None, help="records/s (default: unbounded)")
    p.add_argument("--record-size", type=int, default=None,
                   help="record value size in bytes (overrides record.size)")
    p.add_argument("--txn-size", type=int, default=10, help="records per transaction")
    p.add_argument("--abort-fraction", type=float, default=0.0,
                   help="fraction of transactions aborted on purpose (seeded)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--input-topic", default=None,
                   help="transactional copier variant: read this topic, write --topic")
    p.add_argument("--producer-config", type=Path, default=None,
                   help="Java-style producer properties file")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="one producer property (Java name), applied after the file")
    p.add_argument("--connect-timeout", type=float, default=30.0,
                   help="seconds to reach the cluster before giving up (exit 2)")


def spec_from_args(args: argparse.Namespace) -> GeneratorSpec:
    """Validate the flags and resolve the producer settings."""
    problems = []
    if args.count is not None and args.count < 0:
        problems.append("--count must be >= 0")
    if args.rate is not None and args.rate <= 0:
        problems.append("--rate must be > 0")
    if args.txn_size < 1:
        problems.append("--txn-size must be >= 1")
    if not 0.0 <= args.abort_fraction <= 1.0:
        problems.append("--abort-fraction must be within [0, 1]")
    if args.input_topic and args.mode != "transactional":
        problems.append("--input-topic (the copier) needs --mode transactional")
    if problems:
        raise UsageError("; ".join(problems))
    overrides = load_properties(args.producer_config, args.sets)
    if args.record_size is not None:
        overrides["record_size"] = args.record_size
    settings = cfg.resolve(args.mode, overrides,
                           transactional_id=f"{args.run_id}.{args.pid}")
    return GeneratorSpec(
        run_dir=args.run_dir, run_id=args.run_id, mode=args.mode, pid=args.pid,
        topic=args.topic, bootstrap_servers=args.bootstrap_servers, settings=settings,
        partitions=args.partitions, count=args.count, duration=args.duration,
        rate=args.rate, txn_size=args.txn_size, abort_fraction=args.abort_fraction,
        seed=args.seed, input_topic=args.input_topic, connect_timeout=args.connect_timeout,
    )  # fmt: skip


def run_from_args(args: argparse.Namespace) -> int:
    """Print the effective (redacted) configuration, then run the generator."""
    spec = spec_from_args(args)
    print("effective producer config: "
          + orjson.dumps(cfg.redacted(spec.settings), default=str).decode(), flush=True)
    return run(spec)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 64, not argparse's 2
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    """``python -m producers``."""
    parser = _Parser(prog="python -m producers", description="load generator, one mode")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return run_from_args(args)
    except UsageError as exc:
        print(f"producers: usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except VerifierError as exc:
        print(f"producers: error: {exc}", file=sys.stderr)
        return exc.exit_code
