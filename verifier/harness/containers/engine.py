"""The Docker engine the docker environment talks to, and why it cannot when it cannot.

The engine is the one ``DOCKER_HOST`` names (default ``/var/run/docker.sock``), as for the
``docker`` command. ``make docker-engine`` (compose/docker-engine.sh) starts a private one
for the tests when none answers.
"""

from __future__ import annotations

import os

from verifier.rundata.errors import EnvironmentProblem

#: testcontainers settings the tool needs, unless the user set them: no Ryuk reaper (its
#: image would come from a registry; the tool removes its own containers and, on the next
#: start, what a killed run left, by label), and containers reached through the engine's
#: host (the tool runs beside the engine, not in a container of it)
TESTCONTAINERS_DEFAULTS = {"TESTCONTAINERS_RYUK_DISABLED": "true",
                           "TESTCONTAINERS_CONNECTION_MODE": "docker_host"}


def configure_testcontainers() -> None:
    for key, value in TESTCONTAINERS_DEFAULTS.items():
        os.environ.setdefault(key, value)


def engine_problem() -> str | None:
    """Why the docker environment cannot run here (one line), or None if it can."""
    try:
        import docker
        import testcontainers  # noqa: F401 - the extra must be there too
    except ImportError as exc:
        return (f"the docker extra is not installed ({exc.name} missing): "
                "pip install 'delivery-verifier[docker]'")
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=10)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - docker's errors: one line
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return (f"no Docker engine answers at {where} ({reason}); start one, or "
                "`make docker-engine` for a private one")
    return None


def require_engine() -> None:
    configure_testcontainers()
    problem = engine_problem()
    if problem is not None:
        raise EnvironmentProblem(problem)
