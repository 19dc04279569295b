"""Exposure and triggers benchmark (issue 38): what making faults bite, and saying how hard
each cell was tested, costs on the quick profile (a script, not a test; it prints ratios,
it asserts nothing).

Per round, in alternating order, the quick profile runs twice on the embedded cluster:

- ``with``: as shipped: its scenarios' faults wait for their triggers (the transactional
  producer kill for an open transaction, ack loss for an answer to an append) and every
  run's verdict carries its exposure;
- ``without``: the same scenario files with every ``trigger``/``within`` parameter removed
  (faults act at their planned time, as before issue 38).

It prints each side's wall time and the ratio (target <= 1.1x), then the exposure's own
cost: the step that computes it (``verifier.judge.exposure_facts.add_exposure``: reading
the histories, the checkpoints and the nemesis history) timed again offline on each run
folder of the ``with`` side, against that run's wall time.

    .venv/bin/python benchmarks/exposure_bench.py --base-port 27700 \\
        --state-dir .state/exposure-bench [--rounds 1]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "verifier" / "orchestration" / "scenarios"


def quick_scenarios() -> list[str]:
    profiles = tomllib.loads((SCENARIOS / "_profiles.toml").read_text())
    return list(profiles["quick"]["scenarios"])


def strip_triggers(text: str) -> str:
    """The scenario file without its faults' trigger parameters (TOML inline tables)."""
    text = re.sub(r",?\s*trigger\s*=\s*\"[^\"]*\"", "", text)
    text = re.sub(r",?\s*within\s*=\s*[0-9.]+", "", text)
    text = re.sub(r"params\s*=\s*\{\s*,\s*", "params = { ", text)
    return re.sub(r"\n\s*params\s*=\s*\{\s*\}\s*", "\n", text)


def run(argv: list[str]) -> float:
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1, 3):
        sys.exit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}"
                 f"\n{done.stderr[-2000:]}")
    return time.monotonic() - t0


def exposure_seconds(out: Path) -> list[tuple[str, float, float]]:
    """(scenario, add_exposure seconds, run wall seconds) for each run folder of ``out``."""
    import orjson

    from verifier.judge.checks.load import load_config
    from verifier.judge.exposure_facts import add_exposure
    from verifier.rundata.nemesis import read_nemesis

    rows = []
    for verdict in sorted(out.glob("*/*/verdict.json")):
        run_dir = verdict.parent
        doc = orjson.loads(verdict.read_bytes())
        cfg = load_config(run_dir / "config.json")
        facts = SimpleNamespace(config=cfg, nemesis=read_nemesis(run_dir / "nemesis.jsonl",
                                                                 cfg.run))
        t0 = time.perf_counter()
        add_exposure(doc, run_dir, facts)
        spent = time.perf_counter() - t0
        wall = float((doc.get("phases") or {}).get("total_s") or 0) or float("nan")
        rows.append((run_dir.parent.name, spent, wall))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-port", type=int, default=27700)
    p.add_argument("--state-dir", default=".state/exposure-bench")
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args()
    verifier = str(Path(sys.executable).with_name("verifier"))
    with tempfile.TemporaryDirectory(prefix="exposure-bench-") as tmp:
        stripped = Path(tmp) / "scenarios"
        stripped.mkdir()
        for name in quick_scenarios():
            (stripped / f"{name}.toml").write_text(
                strip_triggers((SCENARIOS / f"{name}.toml").read_text()))
        common = [verifier, "chaos", "--profile", "quick", "--base-port", str(args.base_port),
                  "--state-dir", args.state_dir]
        walls: dict[str, list[float]] = {"with": [], "without": []}
        outs = []
        for r in range(args.rounds):
            order = ("with", "without") if r % 2 == 0 else ("without", "with")
            for side in order:
                out = Path(tmp) / f"{side}-{r}"
                argv = [*common, "--out", str(out)]
                if side == "without":
                    for name in quick_scenarios():
                        argv += ["--scenario", str(stripped / f"{name}.toml")]
                walls[side].append(run(argv))
                print(f"round {r + 1} {side:8} {walls[side][-1]:7.1f} s", flush=True)
                if side == "with":
                    outs.append(out)
        w, wo = sum(walls["with"]), sum(walls["without"])
        print(f"quick profile wall time: with {w:.1f} s, without {wo:.1f} s, "
              f"ratio {w / wo:.3f} (target <= 1.1)")
        for out in outs:
            for scenario, spent, wall in exposure_seconds(out):
                print(f"  exposure of {scenario:14} {spent:6.3f} s of its run's {wall:6.1f} s "
                      f"({spent / wall:.2%})")


if __name__ == "__main__":
    main()
