"""The public API: what the command line, `verifier shrink` and the pytest plugin call,
and what a script of yours may call too. Everything else of the package is private.

Run scenarios (`verifier chaos`)::

    from verifier import api

    request = api.ChaosRequest(scenarios=("ack-loss",), out=Path("runs"))
    code = api.run_prepared(request, ["chaos", "--scenario", "ack-loss"], api.run_chaos)

:func:`prepare` checks every input before anything starts (a
:class:`~verifier.rundata.errors.UsageError`, exit 64, or an
:class:`~verifier.rundata.errors.EnvironmentProblem`, exit 2); :func:`run_prepared` adds
the frame a command needs (signals, the ledger of children, a network namespace for
partitions). One scenario on an environment already up: :func:`run_scenario`.
Analyze a finished run folder offline: :func:`analyze_run`. Shrink a FAILed run:
:func:`plan_shrink`, then :func:`shrink` inside :func:`run_prepared`. Explore the
transaction protocol's perturbations (`verifier explore`): :func:`plan_explore`, then
:func:`run_explore` inside :func:`run_prepared`.
"""

from verifier.api._analyze import Analyzed, analyze_run
from verifier.api._explore import plan_explore, run_explore
from verifier.api._prepare import Prepared, prepare
from verifier.api._process import cleanup, rerun_in_namespace, run_prepared
from verifier.api._request import DEFAULT_BASE_PORT, DEFAULT_STATE, ChaosRequest
from verifier.api._run import run_chaos, run_scenario
from verifier.api._shrink import ShrinkJob, Shrunk, plan_shrink, request_from_plan, shrink
from verifier.api._user import UserProducer, derive_mode, read_user_producer

__all__ = [
    "DEFAULT_BASE_PORT",
    "DEFAULT_STATE",
    "Analyzed",
    "ChaosRequest",
    "Prepared",
    "ShrinkJob",
    "Shrunk",
    "UserProducer",
    "analyze_run",
    "cleanup",
    "derive_mode",
    "plan_explore",
    "plan_shrink",
    "prepare",
    "read_user_producer",
    "request_from_plan",
    "rerun_in_namespace",
    "run_chaos",
    "run_explore",
    "run_prepared",
    "run_scenario",
    "shrink",
]
