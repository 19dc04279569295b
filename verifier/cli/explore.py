"""`verifier explore`: perturbations of the transaction protocol generated, run, judged
and shrunk until the budget is spent (docs/explore.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from verifier import api
from verifier.cli.chaos import _client_arg
from verifier.cli.helptext import HelpFormatter, examples
from verifier.orchestration.explore.space import REQUESTS
from verifier.rundata import jvm


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore", help="search the transaction protocol's perturbations (held, copied, "
                        "dropped, answered with an error, released on a protocol event) "
                        "for a FAIL nobody scripted; shrink and name each",
        description="Generate a scenario per perturbation of one transactional request "
                    "(Produce, EndTxn, AddPartitionsToTxn, TxnOffsetCommit, AddOffsetsToTxn, "
                    "InitProducerId, WriteTxnMarkers x held, a copy, refused, replaced, "
                    "dropped x the event that releases it), cheapest and most likely first, "
                    "then pairs; run each as `verifier chaos` runs a scenario and judge it "
                    "the same way, within the budget. Each FAIL is shrunk (`verifier "
                    "shrink`'s search), written as OUT/findings/<fingerprint>.toml and "
                    "named when it is a known bug; OUT/report.md has the coverage table. "
                    "A second call with the same OUT continues where the first stopped.",
        epilog="exit codes: 1 a FAIL was found (in this folder, this call or an earlier "
               "one); 0 none, and some trial exposed its perturbation; 3 no trial exposed "
               "one; 2 no trial could be verified; 64 usage error (an external cluster "
               "among them); 130 interrupted (the folder keeps what was tried). "
               "docs/explore.md\n\n" + examples(
                   ("verifier explore --kafka-version 3.5.2 --client kafka-python --budget "
                    "30m --out runs/explore-3.5.2", "find, shrink and name a known bug"),
                   ("verifier explore --kafka-version 3.5.2 --budget 10m --out "
                    "runs/explore-3.5.2", "the same folder again: continue for 10 more "
                    "minutes"),
                   ("verifier explore --kafka-version 4.1.1 --client java:4.1.1 --requests "
                    "writetxnmarkers,endtxn --budget 20m --out runs/explore-4.1.1-markers",
                    "focus: only WriteTxnMarkers and EndTxn perturbations")),
        formatter_class=HelpFormatter)
    p.add_argument("--kafka-version", default=None, metavar="VERSION",
                   help="the local cluster's broker release (default $KAFKA_VERSION or "
                        f"{jvm.DEFAULT_KAFKA_VERSION}, as chaos)")
    p.add_argument("--client", default="kafka-python", type=_client_arg,
                   help="the producer client: kafka-python, java, librdkafka, optionally "
                        "at a version (java:3.9.1)")
    p.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker setting every trial runs with (repeatable), e.g. "
                        "transaction.partition.verification.enable=false")
    p.add_argument("--budget", default="30m", metavar="30m",
                   help="wall time of this call, runs and shrinks included (s, m, h)")
    p.add_argument("--shrink-budget", default="10m", metavar="10m",
                   help="at most this much of the budget per finding's shrink")
    p.add_argument("--pairs", type=int, default=12, metavar="N",
                   help="pairs of perturbations tried after every single one")
    p.add_argument("--requests", default=None, metavar="A,B",
                   help="only the trials whose perturbations are of these request types "
                        f"(comma list, case-insensitive): {', '.join(REQUESTS)}; "
                        "WriteTxnMarkers trials put the replication listener behind the "
                        "proxy themselves. A folder keeps its focus (another one is refused)")
    p.add_argument("--out", type=Path, default=Path("runs/explore"), metavar="DIR",
                   help="output folder; it keeps what was tried, so a second call resumes")
    p.add_argument("--seed", type=int, default=1,
                   help="the runs' seed, as chaos --seed: which transactions the "
                        "generators and the copier abort; the trials' order does not "
                        "depend on it")
    p.add_argument("--first", action="store_true",
                   help="stop at the first finding, unshrunk (the next call on the folder "
                        "shrinks it): time to the first finding, as the benchmark measures")
    p.add_argument("--bootstrap-servers", default=None, help=argparse.SUPPRESS)
    p.add_argument("--base-port", type=int, default=api.DEFAULT_BASE_PORT,
                   help="local cluster ports, as for chaos")
    p.add_argument("--state-dir", type=Path, default=api.DEFAULT_STATE, metavar="DIR",
                   help="the local cluster's folder")
    p.set_defaults(func=cmd_explore)


def cmd_explore(args: argparse.Namespace) -> int:
    job, request = api.plan_explore(
        args.out, kafka_version=args.kafka_version, client=args.client,
        settings=args.setting, budget=args.budget, shrink_budget=args.shrink_budget,
        pairs=args.pairs, requests=args.requests, seed=args.seed, first=args.first,
        base_port=args.base_port,
        state_dir=args.state_dir, bootstrap_servers=args.bootstrap_servers)
    return api.run_prepared(request, args.argv,
                            lambda prepared: api.run_explore(
                                job, prepared, say=lambda line: print(line, flush=True)))
