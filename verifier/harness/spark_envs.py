"""A PySpark of its own for the pipelines under test (``verifier chaos --spark-version``).

Users run Spark 3.5 (most long-term-support platform runtimes), 4.0, 4.1 and 4.2; the
tool's own Spark (the observer, the verification) keeps the project's pin. A pipeline
run on another version gets an environment of its own, installed on first use like the
broker jars:

    .spark-envs/<version>/          a virtualenv: pyspark==<version>, the delta-spark
                                    release built for that Spark line, and the project's
                                    other runtime dependencies (pyproject.toml)
    .jars/spark-kafka-<version>/    the Kafka connector at that version (Maven Central;
    .jars/delta-<delta version>/    Scala 2.12 for Spark 3.x, 2.13 for 4.x)

Its driver runs that environment's Python with the project's folder on ``PYTHONPATH``:
the same driver code, the other PySpark. An environment counts only once its folder
holds a ``.complete`` marker (an interrupted install is redone). A version whose
environment or jars cannot be had is a clear error before anything starts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata import jvm
from verifier.rundata.errors import EnvironmentProblem, UsageError, VerifierError

ENVS_ROOT = jvm.PROJECT_ROOT / ".spark-envs"
#: the delta-spark release for each Spark line, pinned, and why: its wheel's pyspark
#: bound and its POM's spark-sql version (checked 2026-11-28 with pip and Maven Central):
#: 3.3.2 says pyspark>=3.5.3,<3.6 (Scala 2.12); 4.0.0 is built on Spark 4.0.0; 4.3.1 on
#: spark-sql 4.1.0, pyspark<=4.1.1; 4.4.0 on spark-sql 4.2.0, pyspark<=4.2.0 (the
#: project's pin; 4.4.1's jar is not on Maven Central as reached from here)
DELTA_FOR = {(3, 5): "3.3.2", (4, 0): "4.0.0", (4, 1): "4.3.1", (4, 2): "4.4.0"}
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
#: pip's own time for one environment (two large wheels on a slow link)
INSTALL_TIMEOUT_S = 1800


@dataclass(frozen=True)
class SparkEnv:
    version: str  # PySpark's
    delta: str  # delta-spark's

    @property
    def folder(self) -> Path:
        return ENVS_ROOT / self.version

    @property
    def python(self) -> Path:
        return self.folder / "bin" / "python"

    @property
    def present(self) -> bool:
        return (self.folder / ".complete").exists() and self.python.exists()

    def child_env(self) -> dict[str, str]:
        """What a driver in this environment needs on top of the run's: the project's
        code importable, and its own Python for the workers."""
        path = os.pathsep.join(p for p in (str(jvm.PROJECT_ROOT),
                                           os.environ.get("PYTHONPATH", "")) if p)
        return {"PYTHONPATH": path, "PYSPARK_PYTHON": str(self.python)}


def parse_versions(text: str) -> list[str]:
    """``--spark-version 3.5.7,4.2.0`` -> the versions (order kept, no repeats); a
    version of a Spark line without a known Delta release is a usage error."""
    out = list(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    if not out:
        raise UsageError("--spark-version: expected versions, e.g. 3.5.7,4.2.0")
    for v in out:
        env_for(v)
    return out


def env_for(version: str) -> SparkEnv:
    if not _VERSION.match(version):
        raise UsageError(f"--spark-version {version!r}: expected a release such as 3.5.7")
    line = tuple(int(x) for x in version.split(".")[:2])
    if line not in DELTA_FOR:
        known = ", ".join(f"{a}.{b}" for a, b in sorted(DELTA_FOR))
        raise UsageError(f"--spark-version {version}: no Delta Lake release is pinned for "
                         f"Spark {line[0]}.{line[1]} (known lines: {known})")
    return SparkEnv(version, DELTA_FOR[line])


def runtime_requirements() -> list[str]:
    """The project's runtime dependencies but PySpark and Delta (pyproject.toml)."""
    data = tomllib.loads((jvm.PROJECT_ROOT / "pyproject.toml").read_text())
    deps = data["project"]["dependencies"]
    return [d for d in deps if not re.match(r"^(pyspark|delta-spark)\b", d)]


def ensure(version: str, say=print) -> SparkEnv:
    """The environment of PySpark ``version`` and its jars, installed if missing;
    EnvironmentProblem (with pip's or Maven's last lines) when they cannot be had."""
    env = env_for(version)
    # the jars first: Maven says in seconds whether the connector exists at all
    for jarset in (jvm.spark_kafka_jars(version), jvm.delta_jars(env.delta)):
        if not jarset.present:
            say(f"resolving {jarset.profile} {jarset.version} (Scala "
                f"{jvm.scala_binary(jarset)}) from Maven Central ...")
        try:
            jvm.resolve(jarset)
        except VerifierError as exc:
            raise EnvironmentProblem(f"Spark {version}: the {jarset.profile} jars "
                                     f"{jarset.version} do not resolve: {exc}") from None
    if env.present:
        return env
    say(f"installing PySpark {version} with delta-spark {env.delta} into {env.folder} "
        "(once) ...")
    _run([sys.executable, "-m", "venv", "--clear", str(env.folder)], version)
    _run([str(env.python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
          f"pyspark=={version}", f"delta-spark=={env.delta}", *runtime_requirements()],
         version)
    (env.folder / ".complete").write_text(f"pyspark=={version} delta-spark=={env.delta}\n")
    return env


def _run(cmd: list[str], version: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"Spark {version}: {' '.join(cmd[:4])} ... did not finish "
                                 f"in {INSTALL_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise EnvironmentProblem(f"Spark {version}: the environment could not be installed "
                                 f"({' '.join(cmd[:4])} ... exited {proc.returncode}):\n{tail}")


__all__ = ["DELTA_FOR", "ENVS_ROOT", "SparkEnv", "ensure", "env_for", "parse_versions",
           "runtime_requirements"]
