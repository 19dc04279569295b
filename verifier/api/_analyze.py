"""Analyzing a finished run folder offline: every check again, from its files alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Analyzed:
    """A run's verdict document, as `verifier analyze` writes it, and the files written."""

    doc: dict
    paths: list[Path]

    @property
    def exit_code(self) -> int:
        return self.doc["exit_code"]


def analyze_run(run_dir: Path | str, *, out: Path | str | None = None, sample: int = 20,
                spark_master: str | None = None, spark_conf: dict | None = None) -> Analyzed:
    """Re-run every check on the finished run in ``run_dir`` and write verdict.json,
    junit.xml and report.html into ``out`` (default: the run folder). A damaged folder is
    a :class:`~verifier.rundata.errors.RunFormatError` before Spark starts; ``sample``
    anomalies are kept per kind and column. Uses the running Spark session if there is
    one (inside tests), else starts one and stops it."""
    from streaming.session import session_running, spark_session
    from verifier.assess.batch import analyze
    from verifier.assess.facts import read_facts
    from verifier.assess.outputs import write_outputs
    from verifier.rundata.layout import RunLayout

    run_dir = Path(run_dir)
    out = Path(out) if out is not None else run_dir
    facts = read_facts(run_dir)  # bad input fails here, before Spark starts
    files = facts.run_files()
    ours = not session_running()
    # the JVM's start-up lines and log4j output go to a log file beside the outputs
    spark = spark_session(app_name="verifier-analyze", master=spark_master,
                          conf=spark_conf or {}, log_file=RunLayout(out).spark_log)
    try:
        doc = analyze(spark, run_dir, cap=sample, facts=facts, files=files)
    finally:
        if ours:
            spark.stop()
    return Analyzed(doc, write_outputs(doc, out))
