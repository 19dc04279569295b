"""The generator clients: which program runs a logical producer, and at which version.

Every client writes the same history format and record values and follows the same
restart policy and transactional flow (docs/formats.md §2); each maps its own exceptions
to ok / fail / info in one table:

- ``kafka-python``: ``python -m producers`` (this package; table in
  :mod:`producers.outcomes`);
- ``java``: Kafka's own Java producer, a plain Java program in ``producers/java`` built at
  ``make setup`` against ``kafka-clients`` at ``KAFKA_CLIENTS_VERSION`` (default: the
  broker's version); table in ``producers/java/.../Outcomes.java`` and
  docs/java-generator.md;
- ``librdkafka``: confluent-kafka (its wheel bundles librdkafka), ``python -m
  producers.rdkafka``; table in :mod:`producers.rdkafka_outcomes`.

Both take ``--plan RUN/config.json --pid P`` and read the run from the plan.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from verifier.rundata import jvm
from verifier.rundata.errors import CommandFailed, EnvironmentProblem, UsageError

CLIENTS = ("kafka-python", "java", "librdkafka")
DEFAULT_CLIENT = "kafka-python"

#: JVM flags of the Java generator: small heap, one GC thread, quick start (C1 only: the
#: generator is I/O-bound on a paced load)
JAVA_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-Dorg.slf4j.simpleLogger.showDateTime=true")
JAVA_MAIN = "verifier.generator.Main"


#: a client version on the command line: a release number, maybe with a suffix (2.10.1rc1)
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:[.-]?[A-Za-z0-9]+)*")


@dataclass(frozen=True)
class ClientSpec:
    """A client of ``--clients``: ``java`` (the pinned version) or ``java:3.9.1``."""

    name: str
    version: str | None = None  # None: the pinned one (KAFKA_CLIENTS_VERSION, .venv's)

    @property
    def text(self) -> str:
        return f"{self.name}:{self.version}" if self.version else self.name


def parse_client(text: str) -> ClientSpec:
    """``"java:3.9.1"`` -> ``ClientSpec("java", "3.9.1")``; an unknown client, a
    malformed version, or a version of kafka-python (one per project venv) is a
    :class:`UsageError`. Pure: whether the version exists is found when it is built."""
    name, sep, version = text.strip().partition(":")
    if name not in CLIENTS:
        raise UsageError(f"unknown client {name!r}; expected one of {', '.join(CLIENTS)}, "
                         "each optionally with :<version> (java:3.9.1, librdkafka:2.6.1)")
    if not sep:
        return ClientSpec(name)
    if not _VERSION.fullmatch(version):
        what = "kafka-clients" if name == "java" else "confluent-kafka"
        raise UsageError(f"client {text.strip()!r}: {version!r} is not a release number; "
                         f"expected {name}:<{what} version>, e.g. "
                         f"{'java:3.9.1' if name == 'java' else 'librdkafka:2.6.1'}")
    if name == "kafka-python":
        raise UsageError(f"client {text.strip()!r}: kafka-python runs the version installed in "
                         ".venv only; versions side by side are for java (kafka-clients) and "
                         "librdkafka (confluent-kafka)")
    return ClientSpec(name, version)


def parse_clients(text: str) -> tuple[str, ...]:
    """``--clients java:3.9.1,java:4.1.1,librdkafka``: each checked, order kept, no
    repeats (``java`` and ``java:<the pinned version>`` are the same client)."""
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for part in text.split(","):
        if not part.strip():
            continue
        spec = parse_client(part)
        key = (spec.name, spec.version or "")
        if key in seen:
            continue
        seen.add(key)
        out.append(spec.text)
    if not out:
        raise UsageError("--clients: expected a comma-separated list, e.g. "
                         "java:3.9.1,java:4.1.1,kafka-python")
    return tuple(out)


def check_client(client: str) -> str:
    """The client's name (``java`` for ``java:3.9.1``) if the spec is valid, else a
    :class:`UsageError` naming the known ones."""
    return parse_client(client).name


def column_suffix(client: str, clients) -> str:
    """What a column of ``client`` is called after its mode when ``clients`` run side by
    side: the bare name (``idempotent/java``), or the name and version when the spec
    names one or another column has the same client (``idempotent/java:3.9.1``)."""
    spec = parse_client(client)
    if spec.version is None and sum(parse_client(c).name == spec.name for c in clients) < 2:
        return spec.name
    return f"{spec.name}:{client_version(client) if spec.name != 'librdkafka' else _rd(spec)}"


def _rd(spec: ClientSpec) -> str:
    """librdkafka columns are named by the confluent-kafka release the user chose."""
    if spec.version:
        return spec.version
    try:
        return metadata.version("confluent-kafka")
    except metadata.PackageNotFoundError:
        return "unknown"


def client_slug(suffix: str) -> str:
    """A column suffix as it can appear in a topic name and a producer id (no ``:``)."""
    return suffix.replace(":", "-")


@lru_cache(maxsize=16)
def client_version(client: str) -> str:
    """The version of the client library a generator of ``client`` runs."""
    spec = parse_client(client)
    if spec.name == "java":
        return spec.version or jvm.clients_version()
    if spec.name == "librdkafka":
        if spec.version:
            from producers.rdkafka_envs import RdkafkaEnv

            env = RdkafkaEnv(spec.version)
            return env.libversion() if env.present else spec.version
        try:
            import confluent_kafka
        except ImportError:
            return "unknown"
        return confluent_kafka.libversion()[0]
    try:
        return metadata.version("kafka-python")
    except metadata.PackageNotFoundError:
        return "unknown"


def require_built(client: str, say: Callable[[str], None] = print) -> None:
    """Build or install what ``client`` runs if it is not there yet (the Java generator
    against its kafka-clients, a confluent-kafka release's environment), saying so;
    an :class:`EnvironmentProblem` naming what was tried when it cannot be had."""
    spec = parse_client(client)
    if spec.name == "librdkafka" and spec.version:
        from producers.rdkafka_envs import ensure

        ensure(spec.version, say)
        client_version.cache_clear()
        return
    if spec.name == "librdkafka":
        try:
            import confluent_kafka  # noqa: F401
        except ImportError:
            raise EnvironmentProblem("confluent-kafka (librdkafka) is not installed: run "
                                     "`make setup`") from None
    if spec.name == "java":
        gen = jvm.java_generator_jars(spec.version)
        if jvm.java_generator_built(gen):
            return
        say(f"building the Java generator against kafka-clients {gen.version} into "
            f"{gen.folder} (once, Maven) ...")
        try:
            jvm.build_java_generator(gen)
        except CommandFailed as exc:
            raise EnvironmentProblem(
                f"client {spec.text}: the Java generator cannot be built against "
                f"org.apache.kafka:kafka-clients:{gen.version} (tried `mvn ... "
                f"-Dkafka.clients.version={gen.version} package` with Maven Central); "
                f"Maven said: {_maven_error(exc.output_tail)}") from None
        say(f"java generator {gen.version} built")


def require_java_apps(say: Callable[[str], None] = print) -> None:
    """Build the Java applications under test (producers/java-apps: the Java copier and
    Kafka Streams presets) against the client version if they are not built yet."""
    jars = jvm.java_apps_jars()
    if jvm.project_built(jvm.APPS_PROJECT, jars):
        return
    say(f"building the Java applications (copier, Kafka Streams) against Kafka "
        f"{jars.version} into {jars.folder} (once, Maven) ...")
    try:
        jvm.build_project(jvm.APPS_PROJECT, jars)
    except CommandFailed as exc:
        raise EnvironmentProblem(
            f"the Java application presets cannot be built against "
            f"org.apache.kafka:kafka-streams:{jars.version} (tried `mvn ... "
            f"-Dkafka.clients.version={jars.version} package` with Maven Central); "
            f"Maven said: {_maven_error(exc.output_tail)}") from None
    say(f"java applications {jars.version} built")


def _maven_error(tail: str) -> str:
    """Maven's first [ERROR] line, without its colour codes and help boilerplate."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", x).strip() for x in tail.splitlines()]
    errors = [x.removeprefix("[ERROR]").strip() for x in lines if x.startswith("[ERROR]")]
    return next((x for x in errors if x), "\n".join(lines[-5:]))


def generator_argv(client: str, plan: Path, pid: str) -> list[str]:
    """The command line of one generator process reading the run from ``plan``."""
    spec = parse_client(client)
    if spec.name == "java":  # --python: what serves a pipeline file's records to it
        return [jvm.java_executable(), *JAVA_OPTS, "-cp",
                jvm.java_generator_jars(spec.version).classpath(), JAVA_MAIN,
                "--python", sys.executable, "--plan", str(plan), "--pid", pid]
    python = sys.executable
    if spec.name == "librdkafka" and spec.version:
        from producers.rdkafka_envs import RdkafkaEnv

        python = str(RdkafkaEnv(spec.version).python)
    module = "producers.rdkafka" if spec.name == "librdkafka" else "producers"
    return [python, "-u", "-m", module, "--plan", str(plan), "--pid", pid]


def label_of(labels, client: str) -> str | None:
    """Which of a run's client labels (``java 3.9.1``, as config.json names its
    generators) is ``client`` (a ``--clients`` spec): the one of its name and version,
    or for a bare name the only label of that name (else the pinned version's)."""
    spec = parse_client(client)
    same = [x for x in dict.fromkeys(labels) if x.split()[0] == spec.name]
    if spec.version is None and len(same) == 1:
        return same[0]
    wanted = f"{spec.name} {client_version(client)}"
    return next((x for x in same if x == wanted), None)


def same_client(a: str, b: str) -> bool:
    """Whether two specs run the same library at the same version (``java`` and
    ``java:4.1.1`` when 4.1.1 is the pinned one)."""
    return check_client(a) == check_client(b) and client_version(a) == client_version(b)


def selects(selected, client: str) -> bool:
    """Whether ``--clients`` ``selected`` keeps ``client``: a bare name keeps every
    version of that client, a name with a version only that one."""
    name = check_client(client)
    return any(same_client(client, s) or (":" not in s and check_client(s) == name)
               for s in selected)
