"""Wait for conditions, never for time.

One helper, :func:`wait_until`, polls a probe until it reports success or a deadline
passes, then raises :class:`~verifier.rundata.errors.WaitTimeout` stating what was expected and
what was last observed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from verifier.rundata.errors import VerifierError, WaitTimeout

T = TypeVar("T")


class GiveUp(Exception):
    """Raised by a probe: stop waiting now and raise ``error`` (e.g. the process that was
    to become ready has exited)."""

    def __init__(self, error: VerifierError) -> None:
        super().__init__(str(error))
        self.error = error


def wait_until(
    probe: Callable[[], tuple[bool, T]],
    *,
    timeout: float,
    what: str,
    expected: str,
    interval: float = 0.2,
    max_interval: float = 2.0,
    describe: Callable[[T], str] = str,
) -> T:
    """Call ``probe`` until it returns ``(True, value)``; return that value.

    ``probe`` returns ``(done, observation)``. An exception from the probe counts as "not
    yet" and its text becomes the observation, so a broker that refuses connections
    while starting does not abort the wait. A probe that knows the condition can never
    hold raises :class:`GiveUp` with the error to raise instead. The poll interval grows
    from ``interval`` to ``max_interval``.
    """
    deadline = time.monotonic() + timeout
    observed = "nothing yet"
    pause = interval
    while True:
        try:
            done, value = probe()
            if done:
                return value
            observed = describe(value)
        except GiveUp as give_up:
            raise give_up.error from None
        except Exception as exc:  # noqa: BLE001 - the probe's failure is an observation
            observed = f"{type(exc).__name__}: {exc}"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(what=what, expected=expected, observed=observed, seconds=timeout)
        # Pacing between probes is the one sleep this project allows: it is bounded by
        # the deadline, and the exit condition is the probe, not the clock.
        time.sleep(min(pause, remaining))
        pause = min(pause * 1.5, max_interval)
