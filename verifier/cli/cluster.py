"""`verifier cluster ...`: the local KRaft cluster."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from verifier.cli.helptext import HelpFormatter, epilog
from verifier.harness.cluster import ClusterSpec, LocalCluster, default_state_dir, up
from verifier.rundata import jvm
from verifier.rundata.errors import ClusterError, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="start, inspect, fault and stop the local Kafka cluster",
                       epilog=epilog(
                           ("verifier cluster up --nodes 3", "a 3-node KRaft cluster on "
                            "127.0.0.1"),
                           ("verifier cluster kill 2", "SIGKILL node 2 (also: stop, pause, "
                            "resume, start, restart)"),
                           ("verifier cluster down", "stop every node, delete the cluster "
                            "folder")),
                       formatter_class=HelpFormatter)
    csub = p.add_subparsers(dest="cluster_command", metavar="ACTION", parser_class=type(p))
    csub.required = True

    def add(name: str, help: str, func, node: bool = False):
        q = csub.add_parser(name, help=help)
        q.add_argument("--state-dir", type=Path, default=None,
                       help="cluster folder (default: $VERIFIER_STATE_DIR or .state/cluster)")
        if node:
            q.add_argument("node", type=int, help="node id (1-based)")
        q.set_defaults(func=func)
        return q

    q = add("up", "start a 1- or 3-node cluster (or report the running one)", cmd_up)
    q.add_argument("--nodes", type=int, choices=(1, 3), default=3)
    q.add_argument("--base-port", type=int, default=9100,
                   help="client ports are BASE+n, replication BASE+100+n, controller BASE+200+n")
    q.add_argument("--heap-mb", type=int, default=512, help="broker heap per node")
    q.add_argument("--timeout", type=float, default=180.0, help="readiness deadline, seconds")
    q.add_argument("--kafka-version", default=None, metavar="VERSION",
                   help="broker release, KRaft 3.3 to 4.x (default $KAFKA_VERSION or "
                        f"{jvm.DEFAULT_KAFKA_VERSION}); its jars are resolved on first use")
    add("status", "print the bootstrap servers and each node's state", cmd_status)
    add("down", "stop every node and delete the cluster folder", cmd_down)
    add("kill", "SIGKILL one node", cmd_node, node=True)
    add("stop", "SIGTERM one node (controlled shutdown)", cmd_node, node=True)
    add("pause", "SIGSTOP one node", cmd_node, node=True)
    add("resume", "SIGCONT one node", cmd_node, node=True)
    add("start", "start one stopped or killed node on its data", cmd_node, node=True)
    add("restart", "restart one node on its data and wait until ready", cmd_node, node=True)


def _state_dir(args: argparse.Namespace) -> Path:
    return args.state_dir or default_state_dir()


def _load(args: argparse.Namespace) -> LocalCluster:
    cluster = LocalCluster.load(_state_dir(args))
    if cluster is None:
        raise ClusterError(f"no cluster in {_state_dir(args)}: run `verifier cluster up` first")
    return cluster


def print_status(cluster: LocalCluster) -> None:
    print(f"cluster {cluster.cluster_id} (Kafka {cluster.spec.kafka_version}) in "
          f"{cluster.state_dir}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    for s in cluster.status():
        via = "" if s.advertised_port == s.client_port else f" (advertised {s.advertised_port})"
        print(f"  node {s.node}: {s.state:<8} pid {s.pid or '-':<8} port {s.client_port}{via}")


def cmd_up(args: argparse.Namespace) -> int:
    try:
        spec = ClusterSpec(nodes=args.nodes, base_port=args.base_port, heap_mb=args.heap_mb,
                           kafka_version=args.kafka_version or jvm.kafka_version())
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    t0 = time.monotonic()
    cluster, action = up(_state_dir(args), spec, timeout=args.timeout)
    if action == "already running":
        print("a cluster is already running here; not starting another")
    elif action == "restarted stale":
        print("found a stale cluster folder whose processes are gone; removed it")
    if action != "already running":
        print(f"cluster ready in {time.monotonic() - t0:.1f}s")
    print_status(cluster)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    cluster = _load(args)
    print_status(cluster)
    states = {s.state for s in cluster.status()}
    return 0 if states == {"running"} else 2


def cmd_down(args: argparse.Namespace) -> int:
    cluster = LocalCluster.load(_state_dir(args))
    if cluster is None:
        print(f"no cluster in {_state_dir(args)}; nothing to stop")
        return 0
    cluster.down()
    print(f"stopped the cluster and removed {cluster.state_dir}")
    return 0


def cmd_node(args: argparse.Namespace) -> int:
    cluster = _load(args)
    if args.node not in cluster.spec.node_ids:
        raise UsageError(f"node {args.node} is not one of {cluster.spec.node_ids}")
    action = {
        "kill": cluster.kill_node,
        "stop": cluster.stop_node,
        "pause": cluster.pause_node,
        "resume": cluster.resume_node,
        "restart": cluster.restart_node,
        "start": lambda n: (cluster.start_node(n), cluster.wait_ready()),
    }[args.cluster_command]
    action(args.node)
    print_status(cluster)
    return 0
