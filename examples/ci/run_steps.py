"""Run the steps of examples/ci/github-actions.yml as written, on this machine (docs/ci.md):
its `env:`, then every `run:` line in a bash shell from the project's folder, stopping at
the first failure as GitHub Actions does (steps marked ``if: always()`` still run). The
steps that use an action are done here by what they stand for: the checkout is this
folder, setup-python and setup-java check the versions found, upload-artifact lists what
it would keep, action-junit-report reads every junit.xml with junitparser (a JUnit
consumer, as the dashboard is) and prints what it would publish.

    .venv/bin/python examples/ci/run_steps.py [examples/ci/github-actions.yml]

Exit code: the first failing step's (0 when every step passed). Only the workflow's own
shape is read (top-level env, one job's steps, one-line runs): this is not a YAML parser.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def read_workflow(path: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    """(env, steps): each step a dict of its keys (``name``, ``run``, ``uses``, ``if``,
    and ``with.<key>`` for its inputs)."""
    env: dict[str, str] = {}
    steps: list[dict[str, str]] = []
    section = None
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("run:") else raw
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if indent == 0:
            section = text.rstrip(":")
            continue
        if section == "env" and indent == 2:
            key, _, value = text.partition(":")
            env[key.strip()] = value.strip()
        elif section == "jobs" and text.startswith("- "):
            steps.append({})
            text = text[2:]
            indent += 2
        if section == "jobs" and steps and indent >= 8 and ":" in text:
            key, _, value = text.partition(":")
            prefix = "with." if indent >= 10 and "with" in steps[-1] else ""
            key, value = key.strip(), value.strip()
            steps[-1][prefix + key] = value if key == "run" else value.strip('"')
    return env, steps


def _describe(step: dict[str, str]) -> str:
    return step.get("name") or step.get("uses") or step.get("run", "?")


def run_action(step: dict[str, str], env: dict[str, str]) -> int:
    """What an action step stands for, done here."""
    uses = step["uses"].split("@")[0]
    if uses == "actions/checkout":
        print(f"checkout: this folder, {ROOT}")
        return 0
    if uses in ("actions/setup-python", "actions/setup-java"):
        argv = [sys.executable, "--version"] if uses.endswith("python") else ["java", "-version"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        print(f"{uses}: wanted {step.get('with.python-version') or step.get('with.java-version')}"
              f", found {(done.stdout + done.stderr).strip().splitlines()[0]}")
        return done.returncode
    if uses == "actions/upload-artifact":
        path = ROOT / step["with.path"]
        files = [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
        size = sum(p.stat().st_size for p in files)
        print(f"upload-artifact {step.get('with.name')}: {step['with.path']}: {len(files)} "
              f"files, {size / 1e6:.1f} MB")
        return 0 if files else 1
    if uses == "mikepenz/action-junit-report":
        from junitparser import JUnitXml

        paths = sorted(glob.glob(str(ROOT / step["with.report_paths"])))
        for p in paths:
            xml = JUnitXml.fromfile(p)
            cases = [c for s in xml for c in s]
            failed = [f"{c.classname}/{c.name}" for c in cases if not c.is_passed
                      and not c.is_skipped]
            print(f"junit {Path(p).relative_to(ROOT)}: {len(cases)} cases, "
                  f"{len(failed)} failed or in error" + (f": {', '.join(failed)}" if failed
                                                       else ""))
        return 0 if paths else 1
    print(f"{uses}: not known here")
    return 1


def main(argv: list[str]) -> int:
    workflow = Path(argv[0]) if argv else ROOT / "examples" / "ci" / "github-actions.yml"
    env, steps = read_workflow(workflow)
    shell_env = {**os.environ, **env}
    failed = 0
    for step in steps:
        if failed and step.get("if") != "always()":
            print(f"\n### {_describe(step)}: skipped (a step before failed)")
            continue
        print(f"\n### {_describe(step)}" + (f": {step['run']}" if "run" in step else ""),
              flush=True)
        t0 = time.monotonic()
        if "run" in step:
            code = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env=shell_env,
                                  check=False).returncode
        else:
            code = run_action(step, shell_env)
        print(f"### {_describe(step)}: exit {code}, {time.monotonic() - t0:.0f} s", flush=True)
        failed = failed or code
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
