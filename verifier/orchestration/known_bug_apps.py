"""A known bug's application column (issue 50): ``app = "streams-count-eos-flush:4.1.2"``
in a ``[[bug.combination]]`` names a Java application preset (verifier.rundata.apps) and
the kafka-clients / kafka-streams release it is built against
(``.jars/java-apps-<version>``, verifier.rundata.jvm.java_apps_jars), as ``client =
"java:4.1.0"`` names the Java producer's. Without a version it is built against the
run's client version (KAFKA_CLIENTS_VERSION, by default the broker's). A bug of the
application itself (Kafka Streams' KAFKA-20685) is a row of the application's release,
whatever the broker; the row runs one instance, which the bug's scenario kills.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verifier.rundata.errors import UsageError

#: a known bug's application runs one instance: the scenario's kills all hit it, so the
#: restart that restores and the kill inside a transaction are the same process's
INSTANCES = 1
_SPEC = re.compile(r"([a-z0-9]+(?:-[a-z0-9]+)*)(?::(\d+\.\d+\.\d+))?")


@dataclass(frozen=True)
class AppSpec:
    """``name[:version]``: a Java preset, and the Kafka release it is built against."""

    name: str
    version: str = ""

    @property
    def text(self) -> str:
        return f"{self.name}:{self.version}" if self.version else self.name

    @property
    def slug(self) -> str:
        """As a folder name takes it (a run's outputs: ``+app=streams-count-eos-4.1.2``)."""
        return f"{self.name}-{self.version}" if self.version else self.name


def parse_app_spec(text: str, where: str = "app") -> AppSpec:
    """``"streams-count-eos:4.1.2"`` -> AppSpec; a name that is not a Java preset, or a
    version that is not a release number, is a usage error naming what to write."""
    from verifier.rundata.apps import preset_named

    m = _SPEC.fullmatch(text.strip())
    preset = preset_named(m[1]) if m else None
    if m is None or preset is None or preset.runtime != "java":
        raise UsageError(f"{where}: {text!r} is not a Java application preset with an "
                         "optional version, e.g. app = \"streams-count-eos:4.1.2\"")
    return AppSpec(m[1], m[2] or "")


def planned(spec: AppSpec, python: str = "python", java: str = "java") -> tuple:
    """The run's ``--app`` for ``spec``: one instance, on the jars of its version."""
    from verifier.rundata import jvm
    from verifier.rundata.apps import plan_apps

    classpath = jvm.java_apps_jars(spec.version or None).classpath()
    return tuple(plan_apps(spec.name, None, INSTANCES, python=python, java=java,
                           classpath=classpath))


def build(plans) -> None:
    """Build each plan's application release that is not built yet (Maven, once), before
    the grid's first cluster starts: a release that cannot build stops the grid before it
    ran anything. Not in the run's checks, so ``--plan`` builds nothing."""
    from verifier.rundata import jvm

    for spec in dict.fromkeys(parse_app_spec(p.app) for p in plans if p.app):
        jvm.build_project(jvm.APPS_PROJECT, jvm.java_apps_jars(spec.version or None))


def built(spec: AppSpec) -> bool:
    """Whether ``spec``'s release is built from the current sources (``--plan`` says so)."""
    from verifier.rundata import jvm

    return jvm.project_built(jvm.APPS_PROJECT, jvm.java_apps_jars(spec.version or None))


def with_app(opts, app: str):
    """``opts`` with a plan's application column (``app``: a combination's text), on the
    jars of its release (:func:`build`); ``opts`` itself without one."""
    import sys
    from dataclasses import replace

    if not app:
        return opts
    from verifier.rundata import jvm

    return replace(opts, apps=planned(parse_app_spec(app), sys.executable,
                                      jvm.java_executable()))
