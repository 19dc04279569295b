"""Command line of the generator: ``python -m producers ...`` and ``verifier produce``.

Both call :func:`add_arguments` and :func:`run_from_args`, so they accept the same flags.
Under the orchestrator a generator gets ``--plan RUN/config.json --pid P`` and reads the
run, its mode, topic, cluster, pacing and security settings from the plan (secrets from
``$VERIFIER_CLIENT_SECRETS``, see :mod:`verifier.rundata.plan`); standalone, the same
facts are flags.
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
from producers.generator import GeneratorSpec, Session, install_stop_handlers, run_plain
from producers.properties import load_properties
from verifier.rundata.errors import UsageError, VerifierError
from verifier.rundata.plan import read_plan

EXIT_OK, EXIT_CANNOT_RUN, EXIT_USAGE = 0, 2, 64
TXN_SIZE = 10

#: flags the plan provides: given together with --plan they are a usage error
PLANNED = ("run_dir", "run_id", "mode", "topic", "bootstrap_servers", "rate", "record_size",
           "txn_size", "abort_fraction", "seed", "producer_config")


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
    p.add_argument("--plan", type=Path, default=None, metavar="RUN/config.json",
                   help="the run's plan: run folder, run id, mode, topic, cluster, pacing "
                        "and security come from it (flags marked * must then be left out)")
    p.add_argument("--run-dir", type=Path, help="* run folder (histories/ inside)")
    p.add_argument("--run-id", help="* run id written into every record")
    p.add_argument("--mode", choices=cfg.MODES, help="*")
    p.add_argument("--pid", required=True, help="logical producer id, stable across restarts")
    p.add_argument("--topic", help="* topic to write (the copier's output)")
    p.add_argument("--bootstrap-servers", help="*")
    p.add_argument("--partitions", type=_partitions, default=None,
                   help="partitions to write round robin, e.g. 0,1,2 (default: all)")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--count", type=int, help="new records this session, then stop")
    stop.add_argument("--duration", type=float, help="seconds, then stop")
    p.add_argument("--rate", type=float, default=None,
                   help="* records/s (default: unbounded)")
    p.add_argument("--record-size", type=int, default=None,
                   help="* record value size in bytes (overrides record.size)")
    p.add_argument("--txn-size", type=int, default=None,
                   help=f"* records per transaction (default {TXN_SIZE}); behind --rate, "
                        "a transaction takes every record already due, up to 2 s of them")
    p.add_argument("--abort-fraction", type=float, default=None,
                   help="* fraction of transactions aborted on purpose (seeded; default 0)")
    p.add_argument("--seed", type=int, default=None, help="* (default 0)")
    p.add_argument("--input-topic", default=None,
                   help="transactional copier variant: read this topic, write --topic")
    p.add_argument("--producer-config", type=Path, default=None,
                   help="* Java-style producer properties file")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="one producer property (Java name), applied after the file")
    p.add_argument("--connect-timeout", type=float, default=30.0,
                   help="seconds to reach the cluster before giving up (exit 2)")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def apply_plan(args: argparse.Namespace) -> dict:
    """Fill the planned flags from ``--plan`` (or check the standalone ones are there);
    return the settings the plan layers on the preset (security, the user's overrides)."""
    if args.plan is None:
        missing = [_flag(k) for k in ("run_dir", "run_id", "mode", "topic",
                                      "bootstrap_servers") if getattr(args, k) is None]
        if missing:
            raise UsageError(f"{', '.join(missing)} required (or --plan RUN/config.json)")
        for key, default in (("txn_size", TXN_SIZE), ("abort_fraction", 0.0), ("seed", 0)):
            if getattr(args, key) is None:
                setattr(args, key, default)
        return {}
    clash = [_flag(k) for k in PLANNED if getattr(args, k) is not None]
    if clash:
        raise UsageError(f"{', '.join(clash)}: given by the plan, leave out with --plan")
    plan = read_plan(args.plan)
    producer = plan.producer(args.pid)
    args.run_dir, args.run_id = args.plan.parent, plan.run
    args.mode, args.topic = producer.expect, producer.topic
    args.input_topic = args.input_topic or producer.input_topic  # the copier's
    args.bootstrap_servers, args.seed = plan.bootstrap_servers, plan.seed
    args.rate = plan.workload.get("rate")
    args.record_size = plan.workload.get("record_size")
    args.txn_size = int(plan.workload.get("txn_size", TXN_SIZE))
    args.abort_fraction = float(plan.workload.get("abort_fraction", 0.0))
    # a pipeline file's declared topic: the user's records (producers.user_records)
    args.user_input = plan.user_input.get(args.pid)
    return plan.producer_overrides(args.pid)


def spec_from_args(args: argparse.Namespace) -> GeneratorSpec:
    """Validate the flags (or read the plan) and resolve the producer settings."""
    planned = apply_plan(args)
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
    overrides = {**planned, **load_properties(args.producer_config, args.sets)}
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
        user_input=getattr(args, "user_input", None),
    )  # fmt: skip


def run_from_args(args: argparse.Namespace) -> int:
    """Print the effective (redacted) configuration, then run the generator."""
    spec = spec_from_args(args)
    print("effective producer config: "
          + orjson.dumps(cfg.redacted(spec.settings), default=str).decode(), flush=True)
    return run(spec)


def run(spec: GeneratorSpec) -> int:
    """Run one generator session in its mode; returns the exit code (0 on a clean stop)."""
    session = Session(spec)
    install_stop_handlers(session.stop)
    print(f"{spec.pid}: session {session.ses}, mode {spec.mode}, topic {spec.topic}, "
          f"history {spec.history_path}", flush=True)
    try:
        if spec.mode == "transactional":  # imported for this mode only
            if spec.input_topic:
                from producers.copier import run_copier

                run_copier(session)
            else:
                from producers.transactional import run_transactional

                run_transactional(session)
        else:
            run_plain(session)
    finally:
        if session.writer is not None:
            session.writer.close()
    print(f"{spec.pid}: session {session.ses} done, {session.new_records} new records",
          flush=True)
    return 0


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
