"""Network namespaces: a run that cuts brokers apart executes inside its own one.

The partition fault (:mod:`verifier.harness.faults.partition`) changes firewall rules,
which must never touch the host's: `verifier chaos` re-executes itself inside a fresh
namespace (:class:`NetNamespace`, loopback only), and the rules refuse to run anywhere
else (:func:`in_private_netns`). A dead run's namespace is removed by the ledger's
clean-up (:mod:`verifier.harness.procs`).
"""

from __future__ import annotations

import os
import signal
import subprocess

from verifier.rundata.errors import CommandFailed


def checked_run(argv: list[str], stdin: str | None = None) -> str:
    """``argv``'s output; a :class:`CommandFailed` when it exits non-zero."""
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CommandFailed(argv, proc.returncode, (proc.stderr or proc.stdout)[-2000:])
    return proc.stdout


def current_netns() -> str | None:
    """The name of the ``ip netns`` namespace this process runs in, None for the host's.

    (Comparing with /proc/1/ns/net is not possible: inside ``ip netns exec`` reading
    PID 1's namespace link is refused with EACCES.)
    """
    proc = subprocess.run(["ip", "netns", "identify", str(os.getpid())],
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def in_private_netns() -> bool:
    """Does this process run in a namespace of its own (not the host's)?"""
    return current_netns() is not None


class NetNamespace:
    """A network namespace with loopback up; deleted (and emptied) on exit."""

    def __init__(self, name: str) -> None:
        self.name = name

    def create(self) -> NetNamespace:
        checked_run(["ip", "netns", "add", self.name])
        try:
            checked_run(["ip", "-n", self.name, "link", "set", "lo", "up"])
        except BaseException:
            self.delete()
            raise
        return self

    def argv(self, command: list[str]) -> list[str]:
        """``command`` run inside the namespace (``ip netns exec`` execs it, same pid)."""
        return ["ip", "netns", "exec", self.name, *command]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in checked_run(["ip", "netns", "pids", self.name]).split()]
        except CommandFailed:
            return []

    def delete(self) -> None:
        """SIGKILL what still runs inside (only processes this run started live there),
        then remove the namespace."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)

    def __enter__(self) -> NetNamespace:
        return self.create()

    def __exit__(self, *exc) -> None:
        self.delete()
