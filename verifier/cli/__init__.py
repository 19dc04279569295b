"""The command line: a thin layer over the packages.

Each command group lives in its own module exposing ``register(subparsers)``; this file
only assembles them and maps errors to exit codes (DESIGN §7): 0 promise kept, 1 a
forbidden anomaly, 2 could not complete or verify, 3 a fault missed a column, 64+ usage
error; the table is verifier.rundata.vocab.EXIT_CODES.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from verifier.cli.helptext import HelpFormatter, epilog
from verifier.rundata.errors import UsageError, VerifierError
from verifier.rundata.vocab import (  # noqa: F401 - the exit codes, for the commands and tests
    EXIT_ANOMALY,
    EXIT_INCOMPLETE,
    EXIT_NOT_EXERCISED,
    EXIT_OK,
    EXIT_USAGE,
)

#: modules that add sub-commands, in the order they appear in --help
COMMAND_MODULES = [
    "verifier.cli.setup",
    "verifier.cli.cluster",
    "verifier.cli.analyze",
    "verifier.cli.advise",
    "verifier.cli.selftest",
    "verifier.cli.produce",
    "verifier.cli.chaos",
    "verifier.cli.shrink",
    "verifier.cli.explore",
    "verifier.cli.image",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2; usage errors are 64 here
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _epilog() -> str:
    return epilog(
        ("verifier chaos --profile quick", "every delivery mode under the quick profile's "
         "faults, verdicts side by side"),
        ("verifier advise my-producer.properties", "in seconds, no cluster: the guarantee a "
         "producer configuration gives, per fault"),
        ("verifier analyze runs/ack-loss/<run>", "re-run every check offline on a finished "
         "run"),
        before="COMMAND --help shows each command's own flags and examples.")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verifier",
        description="Which delivery guarantee does a Kafka producer configuration and a "
        "Spark Structured Streaming pipeline really give under failure?",
        epilog=_epilog(),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # to re-run in a namespace
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # kafka-python logs every refused connection and slow selector task; during a
        # chaos run that is expected and would drown the progress display.
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"verifier: usage error: {exc}", file=sys.stderr)
        return exc.exit_code
    except VerifierError as exc:
        print(f"verifier: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("verifier: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
