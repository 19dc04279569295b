"""The run's Spark observer as a managed process that says when it serves."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from verifier.harness.procs import ManagedProcess
from verifier.rundata.columns import run_columns
from verifier.rundata.layout import RunLayout
from verifier.rundata.plan import read_plan
from verifier.rundata.vocab import ISOLATIONS


class ObserverProcess(ManagedProcess):
    """``python -m streaming.observer --plan RUN/config.json``.

    :meth:`serving`: each isolation level has written a batch since the latest start (the
    progress file's time is later than the start); the run's load waits for it after the
    first start (verifier.orchestration.orchestrator). :meth:`served_for_s`: how long
    either level has been writing batches since the latest start; an observer kill waits
    for it (verifier.harness.faults.kinds.process.not_serving). :attr:`checkpoints` and
    :meth:`column_needs`: what its batches read and what each producer column needs of
    them; an observer kill's ``every-column`` trigger reads both
    (verifier.harness.faults.probes.probe_every_column)."""

    def __init__(self, run_dir: Path, config: Path, log_path: Path, env: dict,
                 python: list[str] | None = None) -> None:
        self.run_dir = Path(run_dir)
        argv = [*(python or [sys.executable, "-u"]), "-m", "streaming.observer",
                "--plan", str(config)]
        super().__init__("observer", argv, log_path, env=env)
        #: (start it belongs to, wall-clock ms of the first batch seen since that start)
        self._first_seen: tuple[int, int] | None = None
        self._config = Path(config)
        self._needs: list[tuple[str, tuple[str, ...], tuple[str, ...]]] | None = None

    @property
    def checkpoints(self) -> dict[str, Path]:
        """Each isolation level's query checkpoint."""
        where = RunLayout(self.run_dir)
        return {iso: where.checkpoint(iso) for iso in ISOLATIONS}

    def column_needs(self) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """(name, topics, isolation levels) of every producer column of the run (the
        report's columns, verifier.rundata.columns), from its plan (written before the
        observer starts)."""
        if self._needs is None:
            plan = read_plan(self._config)
            producers = list(plan.producers.values())
            self._needs = [(c.name, tuple(sorted({p.topic for p in producers
                                                  if p.mode == c.mode})), c.isolations)
                           for c in run_columns(producers)]
        return self._needs

    def serving(self) -> bool:
        from streaming.progress import read_progress

        if self.started_at_ms is None:
            return False
        for iso in ISOLATIONS:
            progress = read_progress(self.run_dir, iso)
            if progress is None or progress.t < self.started_at_ms:
                return False
        return True

    def served_for_s(self) -> float | None:
        """Seconds since the latest start's first batch at *either* level, or None before it.

        Either level: a level with nothing new to read (read_committed behind an open
        transaction) writes no batch, and a kill must not wait on it. The first batch's
        time is the earliest progress time seen since the start; polled late, it is later
        than the real one, so this errs on the short side."""
        from streaming.progress import read_progress

        if self.started_at_ms is None:
            return None
        times = [p.t for iso in ISOLATIONS
                 if (p := read_progress(self.run_dir, iso)) is not None
                 and p.t >= self.started_at_ms]
        if not times:
            return None
        if self._first_seen is None or self._first_seen[0] != self.started_at_ms:
            self._first_seen = (self.started_at_ms, min(times))
        return max(0.0, time.time() - self._first_seen[1] / 1000)
