"""Kafka feature levels (``transaction.version``, ...) set with Kafka's own feature tool
(``kafka-features.sh``: ``org.apache.kafka.tools.FeatureCommand`` from the kafka-tools
jars, resolved like the broker's), as an operator would before an upgrade test.

A cluster at chosen levels is named by its version and the levels:
``4.4.0+transaction.version=0`` (the versions profile's broker-setting dimension and the
known-bugs profile's clusters; their outputs' folder ``kafka-<that name>``). Feature levels
exist on 4.x brokers only: a 3.x broker has no ``transaction.version`` (level 0)."""

from __future__ import annotations

import re
import subprocess
import sys

from verifier.rundata import jvm
from verifier.rundata.errors import EnvironmentProblem, UsageError

TOOL = "org.apache.kafka.tools.FeatureCommand"
TRANSACTION_VERSION = "transaction.version"
#: the levels a 4.x broker accepts for each feature the tool's profiles set
LEVELS = {TRANSACTION_VERSION: (0, 1, 2)}
_FINALIZED = re.compile(r"Feature:\s*(\S+).*?FinalizedVersionLevel:\s*(-?\d+)(?=\s|$)")


def _tool(bootstrap: str, *args: str, timeout: float = 120) -> str:
    jars = jvm.resolve(jvm.tools_jars())
    cmd = [jvm.java_executable(), "-Xmx256m", "-cp", str(jars / "*"), TOOL,
           "--bootstrap-server", bootstrap, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise EnvironmentProblem(f"kafka-features {' '.join(args)}: exit {proc.returncode}: "
                                 f"{(proc.stderr or proc.stdout).strip()[-400:]}")
    return proc.stdout


def parse_describe(text: str) -> dict[str, int]:
    """``kafka-features describe`` output: feature -> finalized level (one per line)."""
    return {m.group(1): int(m.group(2)) for line in text.splitlines()
            if (m := _FINALIZED.search(line))}


def feature_levels(bootstrap: str) -> dict[str, int]:
    return parse_describe(_tool(bootstrap, "describe"))


def set_feature_levels(bootstrap: str, levels: dict[str, int]) -> dict[str, int]:
    """Upgrade or downgrade each feature to its level; returns the levels before."""
    before = feature_levels(bootstrap)
    for name, level in levels.items():
        now = before.get(name, 0)
        if now == level:
            continue
        verb = "upgrade" if level > now else "downgrade"
        _tool(bootstrap, verb, "--feature", f"{name}={level}")
    after = feature_levels(bootstrap)
    wrong = {n: after.get(n, 0) for n, lv in levels.items() if after.get(n, 0) != lv}
    if wrong:
        raise EnvironmentProblem(f"kafka-features: {wrong} after setting {levels}")
    return before


def split_cluster(key: str) -> tuple[str, dict[str, int]]:
    """``4.4.0+transaction.version=0`` -> ``("4.4.0", {"transaction.version": 0})``; the
    version validated (:func:`jvm.parse_kafka_version`), each feature one the tool knows at
    one of its levels, and on a 4.x broker only (else a usage error)."""
    version, *parts = key.strip().split("+")
    major = jvm.parse_kafka_version(version)[0]
    levels: dict[str, int] = {}
    for part in parts:
        name, eq, level = part.partition("=")
        name = name.strip()
        if not eq or name not in LEVELS or not level.strip().isdigit() \
                or int(level) not in LEVELS[name]:
            known = ", ".join(f"{n}={'|'.join(map(str, lv))}" for n, lv in LEVELS.items())
            raise UsageError(f"{key!r}: a cluster is VERSION or VERSION+FEATURE=LEVEL "
                             f"({known})")
        if major < 4:
            raise UsageError(f"{key!r}: feature levels exist on 4.x brokers only")
        levels[name] = int(level)
    return version.strip(), levels


def cluster_key(version: str, levels: dict[str, int]) -> str:
    """The inverse of :func:`split_cluster`, levels sorted by name."""
    return version + "".join(f"+{k}={v}" for k, v in sorted(levels.items()))


def parse_clusters(entries: list[str]) -> list[str]:
    """Clusters (``--kafka-versions`` split at commas, or a profile's list), each
    validated and written as :func:`cluster_key`; order kept, no repeats."""
    out: list[str] = []
    for entry in entries:
        if entry.strip():
            key = cluster_key(*split_cluster(entry))
            if key not in out:
                out.append(key)
    if not out:
        raise UsageError(f"no Kafka version in {entries!r}")
    return out


class FeatureLevels:
    """An environment whose cluster runs at the given feature levels, set with Kafka's
    feature tool right after the start (everything else is the environment's own). With
    ``record``: the levels the cluster runs at afterwards are stored there (read with the
    tool; with no levels to set, only read)."""

    def __init__(self, env, levels: dict[str, int], out=sys.stdout,
                 record: dict[str, int] | None = None) -> None:
        self._env, self._levels, self._out, self._record = env, levels, out, record

    def __getattr__(self, name):
        return getattr(self._env, name)

    def __enter__(self):
        self._env.__enter__()
        try:
            if self._levels:
                before = set_feature_levels(self._env.bootstrap_servers, self._levels)
                print(f"kafka-features: {self._levels} (before: "
                      f"{ {k: before.get(k, 0) for k in self._levels} })", file=self._out,
                      flush=True)
            if self._record is not None:
                self._record.update(feature_levels(self._env.bootstrap_servers))
        except BaseException:
            self._env.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        return self._env.__exit__(*exc)
