"""The checks: a run's histories and observations in, typed anomalies out.

Public surface (the CLI, the chaos orchestrator and the tests use these)::

    run = load_run(spark, "runs/ack-loss/2025...")   # RunData: DataFrames + config
    outcomes = run_checks(run)                         # list[CheckOutcome]

Each check is a pure function of the run's data (DataFrames) returning anomaly rows with
:data:`ANOMALY_COLUMNS`; :func:`run_checks` reduces them to counts and capped samples and
turns a crashing check into an outcome with its traceback.
"""

from verifier.judge.checks.derive import Derived
from verifier.judge.checks.load import load_run
from verifier.judge.checks.runner import CHECKS, run_checks
from verifier.judge.model import (
    ANOMALY_COLUMNS,
    ISOLATIONS,
    KINDS,
    CheckOutcome,
    Drain,
    Group,
    ProducerSpec,
    RunConfig,
    RunData,
)  # fmt: skip
from verifier.rundata.formats import RunFormatError

__all__ = [
    "ANOMALY_COLUMNS",
    "CHECKS",
    "CheckOutcome",
    "Derived",
    "Drain",
    "Group",
    "ISOLATIONS",
    "KINDS",
    "ProducerSpec",
    "RunConfig",
    "RunData",
    "RunFormatError",
    "load_run",
    "run_checks",
]
