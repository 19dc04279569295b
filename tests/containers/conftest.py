"""The container tier (marker ``containers``; `make test-containers`): the docker
environment, the Kafka image it builds, the pytest plugin on containers and
compose/docker-compose.yml, on a real Docker engine.

The engine is the one DOCKER_HOST names; `make test-containers` starts a private one when
none answers (compose/docker-engine.sh) and stops it afterwards. Without an engine every
test here is skipped with the reason. Ports: VERIFIER_CONTAINERS_BASE_PORT (default
23100) and the plan in :data:`PORTS`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE = int(os.environ.get("VERIFIER_CONTAINERS_BASE_PORT", "23100"))
#: every environment of the tier on its own ports (each takes B+1..B+3, B+300..B+303 and,
#: embedded, B+101..B+203): nothing here meets another tier's cluster
PORTS = {"docker": BASE, "embedded": BASE + 400, "plugin": BASE + 800, "compose": BASE + 1200,
         "faults": BASE + 1300}
STATE = Path(os.environ.get("VERIFIER_CONTAINERS_STATE_DIR", ROOT / ".state" / "containers"))


@pytest.fixture(scope="session")
def docker_client():
    """The engine's client; the whole tier is skipped, with the reason, without one."""
    from verifier.harness.containers.engine import configure_testcontainers, engine_problem

    configure_testcontainers()
    problem = engine_problem()
    if problem is not None:
        why = os.environ.get("VERIFIER_DOCKER_UNAVAILABLE")  # set by docker-engine.sh run
        pytest.skip(f"no Docker engine: {why or problem}")
    import docker

    client = docker.from_env()
    try:
        yield client
    finally:
        client.close()


def leftovers(client, label: str) -> list[str]:
    """Containers and networks carrying ``label`` (any value) on the engine."""
    found = [f"container {c.name}" for c in client.containers.list(
        all=True, filters={"label": label})]
    found += [f"network {n.name}" for n in client.networks.list(filters={"label": label})]
    return found
