"""confluent-kafka releases side by side (``--clients librdkafka:2.0.2``).

The librdkafka generator runs the confluent-kafka pinned in ``pyproject.toml`` (in
``.venv``); another release gets a virtualenv of its own, installed on first use like a
broker version's jars:

    .client-envs/confluent-kafka-<version>/    a virtualenv holding that release's wheel
                                               (which bundles its librdkafka) and a .pth
                                               line that adds the project and ``.venv``'s
                                               packages *after* its own

so ``python -m producers.rdkafka`` run by that environment's Python is the same generator
on the other librdkafka. An environment counts only once its folder holds a
``.complete`` marker, which also records the librdkafka version the wheel bundles (an
interrupted install is redone). A release pip cannot install here is a clear error
before anything starts, with pip's own last lines.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata import jvm
from verifier.rundata.errors import EnvironmentProblem

ENVS_ROOT = jvm.PROJECT_ROOT / ".client-envs"
#: pip's own time for one small wheel on a slow link
INSTALL_TIMEOUT_S = 600


@dataclass(frozen=True)
class RdkafkaEnv:
    version: str  # confluent-kafka's

    @property
    def folder(self) -> Path:
        return Path(os.environ.get("VERIFIER_CLIENT_ENVS", ENVS_ROOT)) / \
            f"confluent-kafka-{self.version}"

    @property
    def python(self) -> Path:
        return self.folder / "bin" / "python"

    @property
    def present(self) -> bool:
        return (self.folder / ".complete").exists() and self.python.exists()

    def libversion(self) -> str:
        """The librdkafka version the release bundles (recorded at install)."""
        return (self.folder / ".complete").read_text().split()[1]


def _site_line() -> str:
    """The .pth line: the project's packages and ``.venv``'s, appended after the
    environment's own site-packages, so its confluent_kafka is found first."""
    dirs = [str(jvm.PROJECT_ROOT), *site.getsitepackages()]
    return "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n"


def ensure(version: str, say: Callable[[str], None] = print) -> RdkafkaEnv:
    """The environment of confluent-kafka ``version``, installed if missing;
    EnvironmentProblem naming what was tried when pip cannot install it here."""
    env = RdkafkaEnv(version)
    if env.present:
        return env
    say(f"installing confluent-kafka {version} into {env.folder} (once) ...")
    try:
        libversion = _install(env)
    except BaseException:
        shutil.rmtree(env.folder, ignore_errors=True)  # nothing half-made stays
        raise
    say(f"confluent-kafka {version} (librdkafka {libversion}) ready")
    return env


def _install(env: RdkafkaEnv) -> str:
    version = env.version
    _run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(env.folder)], version)
    # the wheel only: no build from source (it needs that librdkafka's headers), and its
    # dependencies come from .venv through the .pth line
    _run([sys.executable, "-m", "pip", "--python", str(env.python), "install", "-q",
          "--disable-pip-version-check", "--no-deps", "--only-binary=:all:",
          f"confluent-kafka=={version}"], version)
    purelib = subprocess.run([str(env.python), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "zz-verifier-project.pth").write_text(_site_line())
    probe = subprocess.run([str(env.python), "-c", "import confluent_kafka as c; "
                            "print(c.version()[0], c.libversion()[0], c.__file__)"],
                           capture_output=True, text=True, check=False)
    words = probe.stdout.split()
    if probe.returncode != 0 or len(words) != 3 or not words[2].startswith(str(env.folder)):
        raise EnvironmentProblem(f"confluent-kafka {version}: installed into {env.folder} "
                                 f"but its Python does not import it from there: "
                                 f"{(probe.stdout + probe.stderr).strip()[-400:]}")
    (env.folder / ".complete").write_text(f"{words[0]} {words[1]}\n")
    return words[1]


def _run(cmd: list[str], version: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"confluent-kafka {version}: `{' '.join(cmd)}` did not "
                                 f"finish in {INSTALL_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-4:])
        raise EnvironmentProblem(
            f"--clients librdkafka:{version}: confluent-kafka {version} cannot be installed "
            f"on this Python {sys.version_info.major}.{sys.version_info.minor} (tried "
            f"`{' '.join(cmd[2:])}`, exit {proc.returncode}; a wheel only):\n{tail}")


__all__ = ["ENVS_ROOT", "RdkafkaEnv", "ensure"]
