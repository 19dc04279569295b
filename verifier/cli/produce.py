"""`verifier produce ...`: run one load generator in this process (same flags as
``python -m producers``)."""

from __future__ import annotations

import argparse

from verifier.cli.helptext import HelpFormatter, epilog


def register(sub: argparse._SubParsersAction) -> None:
    from producers.cli import add_arguments, run_from_args

    p = sub.add_parser("produce", help="run one load generator (one producer, one mode)",
                       epilog=epilog(
                           ("verifier produce --plan runs/ack-loss/<run>/config.json "
                            "--pid idempotent-0", "as a chaos run starts it"),
                           ("verifier produce --run-dir R --run-id r1 --mode idempotent "
                            "--pid idem-0 --topic t --bootstrap-servers 127.0.0.1:9101 "
                            "--count 10000", "by hand, against `verifier cluster up`")),
                       formatter_class=HelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run_from_args)
