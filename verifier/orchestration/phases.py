"""Run phases and their wall time.

Every run goes through setup -> observer start -> load + faults -> heal -> recover ->
drain -> verify -> report (DESIGN §2; the load waits for the observer's first batch).
:class:`PhaseClock` records how long each took; the times are printed at the end of a run
and stored in the run directory.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class PhaseClock:
    def __init__(self, on_phase=None) -> None:
        self.seconds: dict[str, float] = {}
        self.current: str | None = None
        #: the innermost phase an exception (e.g. a signal's KeyboardInterrupt) broke off
        self.broken_off: str | None = None
        self._on_phase = on_phase
        self._started = time.monotonic()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.current = name
        if self._on_phase:
            self._on_phase(name)
        t0 = time.monotonic()
        try:
            yield
        except BaseException:
            self.broken_off = self.broken_off or name
            raise
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - t0
            self.current = None

    @property
    def total(self) -> float:
        return time.monotonic() - self._started

    def summary(self) -> str:
        parts = [f"{k} {v:.1f}s" for k, v in self.seconds.items()]
        return f"total {self.total:.1f}s (" + ", ".join(parts) + ")"

    def to_json(self) -> dict:
        return {"total_s": round(self.total, 3),
                "phases_s": {k: round(v, 3) for k, v in self.seconds.items()}}
