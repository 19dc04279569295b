"""`verifier chaos --environment docker` gives the embedded environment's verdicts:
the same two scenarios (no fault; a partition leader killed and restarted on its data),
the same seed, once on containers and once on one JVM per broker; every cell equal, every
output written, nothing left on the engine. Prints both wall times."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.containers.conftest import PORTS, STATE, leftovers
from verifier.harness.containers.cluster import LABEL

pytestmark = pytest.mark.containers

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [str(Path(__file__).with_name("scenarios") / f"{n}.toml")
             for n in ("baseline-short", "broker-kill-short")]


def chaos(environment: str, out: Path) -> tuple[dict, float, str]:
    verifier = Path(sys.executable).with_name("verifier")
    argv = [str(verifier), "chaos", "--environment", environment, "--seed", "1",
            "--out", str(out), "--base-port", str(PORTS[environment]),
            "--state-dir", str(STATE / f"chaos-{environment}")]
    for s in SCENARIOS:
        argv += ["--scenario", s]
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1100)
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return orjson.loads((out / "verdict.json").read_bytes()), wall, proc.stdout


@pytest.mark.timeout(2400)  # two matrices of two scenarios, one after the other
def test_docker_environment_gives_the_embedded_verdicts(docker_client, tmp_path):
    docker, docker_s, text = chaos("docker", tmp_path / "docker")
    assert "docker environment: 3 containers of delivery-verifier-kafka:" in text
    assert leftovers(docker_client, LABEL) == []
    embedded, embedded_s, _ = chaos("embedded", tmp_path / "embedded")
    print(f"\nwall time: docker {docker_s:.0f} s, embedded {embedded_s:.0f} s "
          f"(baseline-short + broker-kill-short, seed 1)")
    for matrix, env in ((docker, "docker"), (embedded, "local")):
        assert matrix["environment"] == env
        assert {d["scenario"] for d in matrix["runs"]} == {"baseline-short",
                                                           "broker-kill-short"}
        for doc in matrix["runs"]:
            run = Path(doc["run_dir"])
            for name in ("verdict.json", "junit.xml", "report.html", "config.json"):
                assert (run / name).exists(), run / name
            assert orjson.loads((run / "config.json").read_bytes())["environment"] == env
            for line in doc["fault_summary"]:
                assert ": fired" in line, line
    assert docker["grid"]["grid"] == embedded["grid"]["grid"]
    cells = [v for row in docker["grid"]["grid"].values() for v in row.values()]
    assert cells and set(cells) == {"PASS"}, docker["grid"]["grid"]
