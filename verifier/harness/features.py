"""Kafka feature levels (``transaction.version``, ...) set with Kafka's own feature tool
(``kafka-features.sh``: ``org.apache.kafka.tools.FeatureCommand`` from the kafka-tools
jars, resolved like the broker's), as an operator would before an upgrade test."""

from __future__ import annotations

import re
import subprocess

from verifier.rundata import jvm
from verifier.rundata.errors import EnvironmentProblem

TOOL = "org.apache.kafka.tools.FeatureCommand"
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
