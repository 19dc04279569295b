"""The run's Spark observer as a managed process that says when it serves."""

from __future__ import annotations

import sys
from pathlib import Path

from verifier.harness.procs import ManagedProcess
from verifier.rundata.vocab import ISOLATIONS


class ObserverProcess(ManagedProcess):
    """``python -m streaming.observer --plan RUN/config.json``.

    :meth:`serving`: each isolation level has written a batch since the latest start (the
    progress file's time is later than the start). An observer kill waits for it
    (verifier.harness.faults.actions.not_serving), as the run's load does for the first
    start (verifier.orchestration.orchestrator)."""

    def __init__(self, run_dir: Path, config: Path, log_path: Path, env: dict,
                 python: list[str] | None = None) -> None:
        self.run_dir = Path(run_dir)
        argv = [*(python or [sys.executable, "-u"]), "-m", "streaming.observer",
                "--plan", str(config)]
        super().__init__("observer", argv, log_path, env=env)

    def serving(self) -> bool:
        from streaming.progress import read_progress

        if self.started_at_ms is None:
            return False
        for iso in ISOLATIONS:
            progress = read_progress(self.run_dir, iso)
            if progress is None or progress.t < self.started_at_ms:
                return False
        return True
