"""The life of a command that runs scenarios: its inputs checked first, signals that stop
it cleanly, a ledger of its children (so a killed run's leftovers can be stopped by the
next one), and its re-execution inside a network namespace when partitions need one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable

from verifier.api._prepare import IN_NETNS, Prepared, prepare
from verifier.api._request import ChaosRequest
from verifier.rundata.errors import Interrupted
from verifier.rundata.jvm import PROJECT_ROOT

#: every tool's ledger of children is in LEDGERS/ledger
LEDGERS = PROJECT_ROOT / ".state"


def cleanup(out=sys.stdout) -> list[str]:
    """Stop what runs that are no longer running left behind (processes, network
    namespaces); one line printed per thing stopped, and returned."""
    from verifier.harness.procs import cleanup_leftovers

    said = cleanup_leftovers(LEDGERS)
    for line in said:
        print(f"cleanup: {line}", file=out, flush=True)
    return said


def stop_on_signals() -> dict:
    """First SIGTERM/SIGINT/SIGHUP: stop load, heal, stop everything (short waits; an
    :class:`Interrupted` is raised where the run is); a second one: SIGKILL every child
    and exit at once. Returns the handlers replaced."""
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

    return {sig: signal.signal(sig, handler)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}


def rerun_in_namespace(argv: list[str]) -> int:
    """Run ``verifier ARGV`` (this very command) inside a fresh network namespace
    (loopback only) and return its exit code.

    Everything of the run (cluster, proxy, generators, observer) then lives in the
    namespace, where nftables rules cannot touch the host; the namespace and whatever
    still runs in it are removed afterwards, also on Ctrl-C.
    """
    from verifier.harness.netns import NetNamespace
    from verifier.harness.procs import record, spawn

    name = f"verifier-chaos-{os.getpid()}"
    record("netns", name=name)
    with NetNamespace(name) as ns:
        env = {**os.environ, IN_NETNS: "1"}
        proc = spawn("chaos-in-namespace", ns.argv([sys.executable, "-m", "verifier", *argv]),
                     env=env)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                proc.kill()
            return 130


def run_prepared(request: ChaosRequest, argv: list[str], body: Callable[[Prepared], int],
                 check: Callable | None = None) -> int:
    """The frame of every command that runs scenarios: signals handled from the first
    moment (a signal during the checks says so and exits 130, as one during the run
    does), ``request`` checked (:func:`prepare` with ``check``: bad input fails here,
    before anything starts), an earlier dead run's leftovers stopped, then
    ``body(prepared)`` with every child recorded in the ledger; or, when network
    partitions need it, ``verifier ARGV`` re-executed in a namespace of its own. Returns
    the exit code."""
    from verifier.harness.procs import activate_ledger, release_ledger

    previous = stop_on_signals()
    try:
        prepared = prepare(request, check)
        cleanup()  # leftovers of a dead run would hold ports and keep producing
        activate_ledger(LEDGERS)
        try:
            if prepared.needs_namespace:
                return rerun_in_namespace(argv)
            return body(prepared)
        finally:
            release_ledger()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
