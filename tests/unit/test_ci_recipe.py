"""The CI recipe (issue 49): docs/ci.md shows examples/ci/github-actions.yml verbatim, the
workflow's steps are what examples/ci/run_steps.py reads and runs, and every `verifier`
command in them parses with the CLI's own parser (with the workflow's env put in)."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

from tests.unit.test_docs import parse_error

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"


def _run_steps():
    spec = importlib.util.spec_from_file_location("run_steps", ROOT / "examples" / "ci" /
                                                  "run_steps.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_shows_the_workflow_as_it_is():
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert f"```yaml\n{WORKFLOW.read_text()}```" in page


def test_the_workflow_runs_the_users_files_keeps_the_runs_and_publishes_junit():
    env, steps = _run_steps().read_workflow(WORKFLOW)
    for key in ("PRODUCER_CONFIG", "PIPELINE", "CLIENT"):
        assert key in env
    assert (ROOT / env["PRODUCER_CONFIG"]).exists() and (ROOT / env["PIPELINE"]).exists()
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[0] == "make setup"
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert "actions/upload-artifact" in uses and "mikepenz/action-junit-report" in uses
    kept = [s for s in steps if s.get("uses", "").startswith(("actions/upload-artifact",
                                                              "mikepenz/"))]
    assert all(s.get("if") == "always()" for s in kept)  # kept when a step failed, too
    commands = [r for r in runs if "verifier " in r]
    assert len(commands) == 3
    for command in commands:
        expanded = _expand(command, env)
        argv = shlex.split(expanded)[1:]  # after .venv/bin/verifier
        assert parse_error(argv) is None, command
    assert any("--profile quick" in c and "--producer-config" in c and "--client" in c
               for c in commands)
    assert all("--retry-not-exercised" in c for c in commands if " chaos " in c)


def _expand(command: str, env: dict[str, str]) -> str:
    for key, value in env.items():
        command = command.replace(f"${key}", value)
    return command
