"""`verifier chaos`: every delivery mode under every fault of a profile, side by side."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from verifier.orchestration.scenario import SINKS, load_profiles, load_scenario, scaled
from verifier.rundata.errors import UsageError
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.plan import security_of

#: set in the environment of a chaos run re-executed inside its own network namespace
IN_NETNS = "VERIFIER_CHAOS_NETNS"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chaos", help="run the fault scenarios against every delivery mode and "
                                     "report the verdicts side by side")
    p.add_argument("--profile", default="full", help="quick (CI) or full (default)")
    p.add_argument("--scenario", action="append", default=[], metavar="NAME",
                   help="run only this scenario (repeatable)")
    p.add_argument("--seed", type=int, default=1, help="seeds fault times and proxy rules")
    p.add_argument("--producer-config", type=Path, default=None, metavar="FILE",
                   help="your Java-style producer properties, run as an extra column")
    p.add_argument("--bootstrap-servers", default=None,
                   help="an external cluster (default: start the embedded local cluster)")
    p.add_argument("--spark-master", default=None, help="Spark master (default local[2])")
    p.add_argument("--sink", choices=SINKS, default=None,
                   help="the observer's sink (default: each scenario's own)")
    p.add_argument("--out", type=Path, default=Path("runs"), help="output folder")
    p.add_argument("--base-port", type=int, default=9700,
                   help="local cluster ports (clients BASE+n, proxy BASE+300+n)")
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE, metavar="DIR",
                   help="the local cluster's folder (default .state/chaos)")
    p.set_defaults(func=cmd_chaos)
    c = sub.add_parser("cleanup", help="stop what a chaos run that is no longer running "
                                       "left behind (processes, network namespaces)")
    c.set_defaults(func=cmd_cleanup)


#: the local cluster of a chaos run; every tool's ledger of children is in LEDGERS
DEFAULT_STATE = PROJECT_ROOT / ".state" / "chaos"
LEDGERS = PROJECT_ROOT / ".state"


def cleanup(out=sys.stdout) -> list[str]:
    from verifier.harness.procs import cleanup_leftovers

    said = cleanup_leftovers(LEDGERS)
    for line in said:
        print(f"cleanup: {line}", file=out, flush=True)
    return said


def cmd_cleanup(args: argparse.Namespace) -> int:
    if not cleanup():
        print("cleanup: nothing left by an earlier run")
    return 0


class Interrupted(KeyboardInterrupt):
    """The tool was asked to stop by a signal."""


def _stop_on_signals() -> None:
    """First SIGTERM/SIGINT/SIGHUP: stop load, heal, stop everything (short waits);
    a second one: SIGKILL every child and exit at once."""
    from verifier.harness.procs import STOPPING, kill_all_now

    def handler(signum, _frame):
        name = signal.Signals(signum).name
        if STOPPING.is_set():
            kill_all_now()
            os._exit(128 + signum)
        STOPPING.set()
        print(f"\nverifier: {name}: stopping the run (a second signal stops at once)",
              file=sys.stderr, flush=True)
        raise Interrupted(name)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)


def derive_mode(settings: dict) -> str:
    """The preset whose promise a user's producer settings claim (DESIGN §4)."""
    if settings.get("transactional_id"):
        return "transactional"
    idem = settings.get("enable_idempotence")
    acks_all = settings.get("acks", -1) in (-1, "all")
    retries = settings.get("retries", 1)
    if idem is True:
        return "idempotent"
    if idem is None and acks_all and retries != 0 and \
            settings.get("max_in_flight_requests_per_connection", 5) <= 5:
        return "idempotent"  # kafka-python's default since 3.0: idempotence on
    return "at-least-once" if acks_all and retries != 0 else "at-most-once"


def _scenarios(args: argparse.Namespace):
    profiles = load_profiles()
    if args.profile not in profiles:
        raise UsageError(f"unknown profile {args.profile!r}; known: {sorted(profiles)}")
    profile = profiles[args.profile]
    names = args.scenario or list(profile.scenarios)
    return profile, [scaled(load_scenario(n), profile) for n in names]


def _partition_capable() -> str | None:
    """Why this run cannot do network partitions, or None if it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables, per-broker users)"
    missing = [t for t in ("ip", "nft", "setpriv") if shutil.which(t) is None]
    return f"needs {', '.join(missing)}" if missing else None


def _rerun_in_namespace(args: argparse.Namespace) -> int:
    """Run this very command inside a fresh network namespace (loopback only).

    Everything of the run (cluster, proxy, generators, observer) then lives in the
    namespace, where nftables rules cannot touch the host; the namespace and whatever
    still runs in it are removed afterwards, also on Ctrl-C.
    """
    from verifier.harness.faults.netns import NetNamespace
    from verifier.harness.procs import record, spawn

    name = f"verifier-chaos-{os.getpid()}"
    record("netns", name=name)
    with NetNamespace(name) as ns:
        env = {**os.environ, IN_NETNS: "1"}
        argv = ns.argv([sys.executable, "-m", "verifier", *args.argv])
        proc = spawn("chaos-in-namespace", argv, env=env)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                proc.kill()
            return 130


def cmd_chaos(args: argparse.Namespace) -> int:
    from verifier.harness.procs import activate_ledger, release_ledger

    profile, scenarios = _scenarios(args)  # bad input fails before anything starts
    cleanup()  # leftovers of a dead run would hold ports and keep producing
    activate_ledger(LEDGERS)
    _stop_on_signals()
    try:
        return _chaos(args, profile, scenarios)
    finally:
        release_ledger()


def _chaos(args: argparse.Namespace, profile, scenarios) -> int:
    from producers.properties import load_properties
    from streaming.session import spark_session
    from verifier.harness.environment import ExternalEnvironment, LocalEnvironment
    from verifier.orchestration.chaos import run_matrix
    from verifier.orchestration.orchestrator import RunOptions, spark_env

    user_mode = None
    settings: dict = {}
    if args.producer_config is not None:
        settings = load_properties(args.producer_config)
        user_mode = derive_mode(settings)
        print(f"your producer config {args.producer_config} claims: {user_mode}")
    # the connection settings every client of the run uses (in the plan, secrets redacted)
    client_config = security_of(settings)
    wants_partition = any(f.get("kind") == "network-partition"
                          for s in scenarios for f in s.faults)
    in_netns = os.environ.get(IN_NETNS) == "1"
    if wants_partition and not args.bootstrap_servers and not in_netns:
        why_not = _partition_capable()
        if why_not is None:
            return _rerun_in_namespace(args)
        print(f"network-partition faults are skipped: {why_not}")
    if args.bootstrap_servers:
        env = ExternalEnvironment(args.bootstrap_servers, client_config)
        print(f"external cluster {args.bootstrap_servers}: proxy and broker faults are "
              "skipped (they need the local cluster); process faults still run")
    else:
        env = LocalEnvironment(args.state_dir.resolve(), base_port=args.base_port,
                               partitions=in_netns)
    opts = RunOptions(out=args.out, seed=args.seed, sink=args.sink,
                      spark_master=args.spark_master, user_config=args.producer_config,
                      user_mode=user_mode, user_settings=settings, profile=profile.name,
                      extra_env=spark_env())
    print(f"profile {profile.name}: {', '.join(s.name for s in scenarios)} "
          f"(seed {args.seed}, output {args.out})", flush=True)
    spark = spark_session(app_name="verifier-chaos", master=args.spark_master)
    try:
        return run_matrix(env, scenarios, opts, spark)
    finally:
        spark.stop()
