"""A finding shrunk with `verifier shrink`'s own search (docs/shrink.md) on the cluster
the exploration runs on: the FAILed trial's run folder is the original, its candidates
run through the same chaos machinery; nothing of the search is explore's own."""

from __future__ import annotations

from pathlib import Path

from verifier.orchestration.shrink import Shrinker
from verifier.orchestration.shrink_plan import load_failed_run, scenario_toml
from verifier.orchestration.shrink_result import Result
from verifier.orchestration.shrink_runner import ChaosRunner, write_outputs


def shrink_finding(run_dir: Path, column: str, kind: str, out: Path, budget_s: float,
                   env, opts, spark, log, command, say) -> tuple[Result, dict[str, Path]]:
    """Shrink the FAIL (``column``, ``kind``) of ``run_dir`` into ``out`` (shrunk.toml,
    shrink.md, shrink.json, each candidate's run) within ``budget_s``: one calibration
    run and one confirmation run, the exploration's budget being the limit (a finding
    that does not reproduce keeps its trial's scenario: shrink's ``not-reproduced``).
    Call it inside ``with env:``. ``command(path)``: the chaos command that runs a
    scenario file as this exploration does."""
    failed = load_failed_run(run_dir, column, kind)
    out.mkdir(parents=True, exist_ok=True)
    (out / "original.toml").write_text(scenario_toml(failed.spec,
                                                     [f"the scenario of {run_dir}"]))
    runner = ChaosRunner(env, opts, spark, out, failed.spec["name"], column, log)
    result = Shrinker(failed.spec, failed.fingerprint, runner, budget_s=budget_s,
                      est_run_s=failed.seconds, calibrate=1, confirm=1,
                      column_modes=failed.column_modes,
                      say=lambda line: say(f"      {line}")).shrink()
    return result, write_outputs(result, failed, out, command(out / "shrunk.toml"))
