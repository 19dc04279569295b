"""A run's part of the fault proxy's connection log, copied into its folder once the
proxy has logged the closes of the run's processes (the connection report reads it)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from verifier.rundata.errors import VerifierError
from verifier.rundata.waiting import GiveUp, wait_until

#: the proxy writes a connection's close line when it has seen both sides end: after the
#: run's processes exit, the log is copied once it has been this long without a new line
CONN_LOG_QUIET_S = 1.0
CONN_LOG_WAIT_S = 10.0


def save_connections(log: Path, offset: int, dest: Path) -> None:
    """This run's part of the proxy's connection log (written since ``offset``) into the
    run folder, with the log's header, whole lines only; copied once the proxy has logged
    the closes of the processes just stopped (the log quiet for :data:`CONN_LOG_QUIET_S`,
    at most :data:`CONN_LOG_WAIT_S`): copied at once, a stopped observer's 50-odd
    connections were still open in the report, and a "leak"."""
    last = [-1, time.monotonic()]

    def quiet() -> tuple[bool, int]:
        size = log.stat().st_size
        if size != last[0]:
            last[:] = [size, time.monotonic()]
        return time.monotonic() - last[1] >= CONN_LOG_QUIET_S, size

    try:
        wait_until(quiet, timeout=CONN_LOG_WAIT_S, what="the proxy's close lines",
                   expected=f"no new line for {CONN_LOG_QUIET_S:g} s", interval=0.2,
                   max_interval=0.2)
    except (GiveUp, VerifierError, OSError):
        pass  # still busy (another cluster's clients?): copy what is there
    try:
        with open(log, "rb") as f:
            header = f.readline()
            f.seek(max(offset, len(header)))
            body = f.read()
    except OSError as exc:
        logging.getLogger(__name__).warning("connection log %s not copied: %s", log, exc)
        return
    body = body[: body.rfind(b"\n") + 1]  # a line being written is left out
    dest.write_bytes(header + body)
