"""`verifier cleanup --bootstrap-servers ...`: what killed runs left on an external cluster.

``verifier cleanup`` alone stops what a dead run left on this machine (processes, network
namespaces; verifier.cli.chaos). With ``--bootstrap-servers`` it also removes, on that
cluster, the topics and consumer groups of the runs this machine recorded there whose
tool is gone (a ``kill -9``: verifier.harness.leftovers), or of the runs named with
``--run``; never a run whose tool still runs, never a name without a run's prefix.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verifier.rundata.errors import EnvironmentProblem, UsageError


def add_cluster_cleanup(parser: argparse.ArgumentParser, local_cleanup) -> None:
    """The cluster's options on ``verifier cleanup``; ``local_cleanup(args)`` runs first."""
    parser.add_argument("--bootstrap-servers", default=None,
                        help="also remove, on this external cluster, the topics and groups "
                             "of runs killed before they could (recorded on this machine), "
                             "or of the runs named with --run")
    parser.add_argument("--producer-config", type=Path, default=None, metavar="FILE",
                        help="the properties the runs used: their security settings "
                             "(TLS, SASL; JKS and PKCS12 stores too) reach the cluster")
    parser.add_argument("--run", action="append", default=[], metavar="RUN_ID",
                        help="remove this run's topics and groups (verifier-<scenario>-"
                             "<UTC start>-s<seed>; repeatable): a run kept with "
                             "--keep-topics, or one another machine started")
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would be removed, remove nothing")

    def cmd(args: argparse.Namespace) -> int:
        code = local_cleanup(args)
        if args.bootstrap_servers is None:
            if args.run or args.producer_config or args.dry_run:
                raise UsageError("--run, --producer-config and --dry-run go with "
                                 "--bootstrap-servers")
            return code
        return cluster_cleanup(args) or code

    parser.set_defaults(func=cmd)


def cluster_cleanup(args: argparse.Namespace, out=sys.stdout) -> int:
    """Remove the killed runs' topics and groups from ``args.bootstrap_servers``."""
    from verifier.harness import leftovers as L
    from verifier.harness.topics import admin

    L.check_run_ids(args.run)
    security = {}
    if args.producer_config is not None:
        from producers.properties import read_user_config
        from verifier.rundata.plan import security_of

        # read as the Java client would: every producer key accepted, only the
        # connection's settings used
        security = security_of(read_user_config(args.producer_config, "java").settings)
    bs = args.bootstrap_servers
    mine = L.recorded(bs)
    busy = [r for r in args.run if r in mine.running]
    if busy:
        raise UsageError("refused: " + ", ".join(f"{r} is still running (pid "
                                                  f"{mine.running[r]})" for r in busy))
    wanted = list(dict.fromkeys([*args.run, *mine.dead]))
    try:
        with admin(bs, timeout=20, **security) as a:
            found = L.on_cluster(a)
            present = [r for r in wanted if r in found.runs]
            if args.dry_run:
                said = [f"would delete {kind} {n}" for r in present
                        for kind, names in (("topic", found.topics), ("group", found.groups))
                        for n in names.get(r, [])]
            else:
                said = L.remove_runs(a, found, present)
                L.forget(bs, mine.records)
    except (UsageError, EnvironmentProblem):
        raise
    except Exception as exc:  # noqa: BLE001 - kafka-python's many errors: one line
        raise EnvironmentProblem(f"cleanup: cannot use the cluster at {bs}: "
                                 f"{type(exc).__name__}: {exc}") from None
    for line in said:
        print(f"cleanup: {line}", file=out, flush=True)
    if not said:
        print(f"cleanup: nothing of a killed run on {bs}", file=out, flush=True)
    others = [r for r in found.runs if r not in wanted]
    if others:
        running = [r for r in others if r in mine.running]
        print(f"cleanup: left on {bs}: {len(others)} other runs of this tool "
              f"({len(running)} still running here; the rest kept with --keep-topics or "
              f"another machine's): {', '.join(others)}; `--run RUN_ID` removes one",
              file=out, flush=True)
    if said and not args.dry_run:
        print("cleanup: their transactional ids cannot be deleted; the cluster expires "
              "them (transactional.id.expiration.ms, 7 days by default)", file=out,
              flush=True)
    return 0
