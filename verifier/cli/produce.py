"""`verifier produce ...`: run one load generator in this process (same flags as
``python -m producers``)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from producers.cli import add_arguments, run_from_args

    p = sub.add_parser("produce", help="run one load generator (one producer, one mode)")
    add_arguments(p)
    p.set_defaults(func=run_from_args)
