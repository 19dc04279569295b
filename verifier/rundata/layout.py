"""Every path of a run folder, named once (docs/formats.md §1).

    RUN/config.json                       the run's plan (formats.md §5)
    RUN/histories/<pid>.jsonl             one producer's history (§2)
    RUN/nemesis.jsonl                     the fault history (§3)
    RUN/observations/_format.json         observation format marker (§4)
    RUN/observations/<reader>/<isolation>/*.parquet
    RUN/observations/progress/<isolation>.json   the observer's sink progress
    RUN/checkpoints/<isolation>/          Spark checkpoints
    RUN/checkpoints/live-<isolation>/     the live checks' state (state-<batch>.json)
    RUN/anomalies/<isolation>/            live anomalies and summary.json
    RUN/drain.json                        the drain's result
    RUN/connections.jsonl                 the proxy's connection log (this run's part)
    RUN/verdict.json, junit.xml, report.html
    RUN/selftest.json, selftest-kept/     chaos --selftest: its table, failing copies
    RUN/logs/<process>.log                every child process's output
    RUN/logs/verifier-spark.log           the tool's own Spark driver JVM (verification);
                                          `verifier chaos` has one for all its runs, in
                                          OUT/logs/ beside the matrix's verdict.json
    RUN/INTERRUPTED                       the run was stopped by a signal: why and when
    RUN/generators-failed.json            generators that exited before producing
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run folder. Building one touches nothing on disk."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def histories(self) -> Path:
        return self.root / "histories"

    def history(self, pid: str) -> Path:
        return self.histories / f"{pid}.jsonl"

    @property
    def nemesis(self) -> Path:
        return self.root / "nemesis.jsonl"

    @property
    def observations(self) -> Path:
        return self.root / "observations"

    @property
    def observations_format(self) -> Path:
        return self.observations / "_format.json"

    def observations_of(self, reader: str, isolation: str) -> Path:
        return self.observations / reader / isolation

    def progress(self, isolation: str) -> Path:
        return self.observations / "progress" / f"{isolation}.json"

    def checkpoint(self, isolation: str) -> Path:
        """Each isolation level has its own checkpoint (notes/spark-kafka.md §4.5)."""
        return self.root / "checkpoints" / isolation

    def live_state(self, isolation: str) -> Path:
        """The live checks' state after each batch, beside Spark's checkpoint (issue 16)."""
        return self.root / "checkpoints" / f"live-{isolation}"

    def anomalies_of(self, isolation: str) -> Path:
        """What the live checks found: one Parquet file per observation file that had
        anomalies, and ``summary.json`` (counts so far)."""
        return self.root / "anomalies" / isolation

    @property
    def drain(self) -> Path:
        return self.root / "drain.json"

    @property
    def connections(self) -> Path:
        return self.root / "connections.jsonl"

    @property
    def verdict(self) -> Path:
        return self.root / "verdict.json"

    @property
    def junit(self) -> Path:
        return self.root / "junit.xml"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def selftest(self) -> Path:
        """`chaos --selftest`: the self-test's table for this run."""
        return self.root / "selftest.json"

    @property
    def selftest_kept(self) -> Path:
        """The self-test's copies whose row failed, kept for a bug report."""
        return self.root / "selftest-kept"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, process: str) -> Path:
        return self.logs / f"{process}.log"

    @property
    def spark_log(self) -> Path:
        """The output of the tool's own Spark driver (its JVM's start-up lines and log4j),
        which stays off the terminal."""
        return self.log("verifier-spark")

    @property
    def interrupted(self) -> Path:
        """Present when a signal stopped the run: one line, the signal and the phase."""
        return self.root / "INTERRUPTED"

    @property
    def start_failures(self) -> Path:
        """Present when a generator exited before producing: its exit code and the last
        line of its log (:mod:`verifier.rundata.startfail`)."""
        return self.root / "generators-failed.json"


def layout(run_dir: Path | str | RunLayout) -> RunLayout:
    """Accept a run folder path or a layout."""
    return run_dir if isinstance(run_dir, RunLayout) else RunLayout(Path(run_dir))
