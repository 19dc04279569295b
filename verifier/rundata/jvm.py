"""The JVM side of the local environment: Java, Maven and the resolved jars.

Three jar sets are resolved by Maven from Maven Central (``compose/pom.xml``, one profile
each) into ``.jars/<set>-<version>/``. A set counts as present only once its folder holds
a ``.complete`` marker, so an interrupted download is redone, and resolution is skipped
when the marker is there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from verifier.rundata.errors import CommandFailed, EnvironmentProblem, UsageError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POM = PROJECT_ROOT / "compose" / "pom.xml"
MAVEN_SETTINGS = PROJECT_ROOT / "compose" / "maven-settings.xml"
LOG4J_CONFIG = PROJECT_ROOT / "compose" / "log4j2.properties"
#: Kafka 3.x brokers log through Log4j 1 (reload4j), configured by this file
LOG4J1_CONFIG = PROJECT_ROOT / "compose" / "log4j.properties"

#: Kafka broker, tools and Java client version: the newest release whose whole chain
#: resolves from Maven Central here (issue 50; KRaft-only, Java 17). Overridable with
#: KAFKA_VERSION (the Makefile passes it, and says why this one).
DEFAULT_KAFKA_VERSION = "4.4.0"
#: the oldest broker line whose KRaft mode the cluster manager runs (KRaft was declared
#: production-ready in 3.3); every later 3.x and 4.x release on Maven Central works
MIN_KAFKA = (3, 3)
MIN_JAVA = 17

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def jars_root() -> Path:
    return Path(os.environ.get("VERIFIER_JARS_DIR", PROJECT_ROOT / ".jars"))


def parse_kafka_version(text: str) -> tuple[int, int, int]:
    """``"3.6.2"`` -> ``(3, 6, 2)``; a version the cluster manager cannot run (not a
    release number, older than 3.3, or a 5.x it has never seen) is a usage error."""
    m = _VERSION.fullmatch(text.strip())
    if not m:
        raise UsageError(f"Kafka version {text!r} is not a release number like 3.9.1 or 4.1.1")
    version = (int(m[1]), int(m[2]), int(m[3]))
    if version[:2] < MIN_KAFKA or version[0] > 4:
        raise UsageError(f"Kafka version {text}: the local cluster runs KRaft releases from "
                         f"{MIN_KAFKA[0]}.{MIN_KAFKA[1]} to 4.x")
    return version


def kafka_version() -> str:
    """The broker version: KAFKA_VERSION, by default 4.4.0 (validated)."""
    version = os.environ.get("KAFKA_VERSION") or DEFAULT_KAFKA_VERSION
    parse_kafka_version(version)
    return version.strip()


def parse_kafka_versions(text: str) -> list[str]:
    """A comma-separated list of broker versions, each validated, order kept, no repeats."""
    out: list[str] = []
    for part in text.split(","):
        if not part.strip():
            continue
        parse_kafka_version(part)
        if part.strip() not in out:
            out.append(part.strip())
    if not out:
        raise UsageError(f"no Kafka version in {text!r}")
    return out


def uses_log4j1(version: str) -> bool:
    """Kafka 3.x brokers log through Log4j 1 (reload4j); 4.x through Log4j 2."""
    return parse_kafka_version(version)[0] < 4


def clients_version() -> str:
    """The kafka-clients version the Java generator is built against: the client under
    test, KAFKA_CLIENTS_VERSION, by default the broker's."""
    return os.environ.get("KAFKA_CLIENTS_VERSION") or kafka_version()


def spark_version() -> str:
    """The connector must match the installed PySpark exactly."""
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError as exc:
        raise EnvironmentProblem("pyspark is not installed: run `make setup`") from exc


@dataclass(frozen=True)
class JarSet:
    profile: str  # the set's name: its folder is .jars/<profile>-<version>
    version: str
    #: the profile in compose/pom.xml that resolves it, when not ``profile`` itself
    pom_profile: str | None = None

    @property
    def folder(self) -> Path:
        return jars_root() / f"{self.profile}-{self.version}"

    @property
    def present(self) -> bool:
        return (self.folder / ".complete").exists()

    def classpath(self) -> str:
        return str(self.folder / "*")

    def jars(self) -> list[Path]:
        return sorted(self.folder.glob("*.jar"))


def broker_jars(version: str | None = None) -> JarSet:
    """The broker's classpath at ``version`` (default :func:`kafka_version`): several
    versions live side by side in ``.jars/broker-<version>``; a 3.x set carries Log4j 1."""
    version = version or kafka_version()
    return JarSet("broker", version, "broker-log4j1" if uses_log4j1(version) else None)


def tools_jars() -> JarSet:
    return JarSet("kafka-tools", kafka_version())


def spark_kafka_jars(version: str | None = None) -> JarSet:
    """The Spark Kafka connector for PySpark ``version`` (default: the installed one)."""
    return JarSet("spark-kafka", version or spark_version())


def scala_binary(jarset: JarSet) -> str | None:
    """The Scala line of a Spark-side jar set: Spark 3.x (and Delta 3.x, built for it)
    ship for Scala 2.12 as PyPI's PySpark does, Spark 4.x (Delta 4.x) for 2.13 only;
    None for the sets that are not Spark's."""
    if jarset.profile not in ("spark-kafka", "delta"):
        return None
    return "2.12" if parse_kafka_version(jarset.version)[0] < 4 else "2.13"


def delta_version() -> str:
    """Delta Lake's jars must match the installed delta-spark wheel (pyproject.toml)."""
    try:
        return metadata.version("delta-spark")
    except metadata.PackageNotFoundError as exc:
        raise EnvironmentProblem("delta-spark is not installed: run `make setup`") from exc


def delta_jars(version: str | None = None) -> JarSet:
    """Delta Lake for the pipelines under test (streaming.pipelines): delta-spark and
    delta-storage at ``version`` (default: the installed wheel's)."""
    return JarSet("delta", version or delta_version())


#: the PostgreSQL JDBC driver the database presets write and read through (issue 46)
POSTGRES_JDBC_VERSION = "42.7.4"


def postgres_jdbc_jars(version: str | None = None) -> JarSet:
    """org.postgresql:postgresql (no dependencies at runtime), from Maven Central."""
    return JarSet("postgres-jdbc", version or POSTGRES_JDBC_VERSION)


def java_generator_jars(version: str | None = None) -> JarSet:
    """The Java load generator (``producers/java``) and its runtime classpath, built
    against kafka-clients ``version`` (default :func:`clients_version`): several versions
    live side by side in ``.jars/java-generator-<version>``."""
    return JarSet("java-generator", version or clients_version())


def java_executable() -> str:
    """The one ``java`` every JVM of the tool runs on (brokers, Spark, the Kafka tools):
    ``$JAVA_HOME/bin/java`` when JAVA_HOME is set (then it must hold one: Spark would use
    it too), else the ``java`` on PATH. :func:`choose_java` pins the choice for children."""
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = Path(home) / "bin" / "java"
        if not (exe.is_file() and os.access(exe, os.X_OK)):
            raise EnvironmentProblem(f"JAVA_HOME={home} holds no bin/java; point it at a JDK "
                                     f"{MIN_JAVA}+ or unset it to use the java on PATH")
        return str(exe)
    return "java"


def java_home() -> Path | None:
    """The home of the JDK the tool runs on (JAVA_HOME, else the ``java`` on PATH), found
    without starting it; None when there is no such ``java``."""
    exe = shutil.which(java_executable())
    return Path(os.path.realpath(exe)).parent.parent if exe else None


def choose_java() -> str:
    """Choose the Java once for the whole run (checked: present, new enough) and set
    JAVA_HOME to it, so that Spark and every child process run on the same JVM."""
    require_java()
    exe = shutil.which(java_executable())
    assert exe is not None  # require_java checked it
    os.environ["JAVA_HOME"] = str(java_home())
    return exe


@lru_cache(maxsize=1)
def java_major_version(java: str | None = None) -> int:
    """Return the major version of ``java`` (default :func:`java_executable`), or raise a
    clear error."""
    java = java or java_executable()
    exe = shutil.which(java)
    if exe is None:
        raise EnvironmentProblem(
            f"Java {MIN_JAVA}+ is required to run Kafka and Spark, but `{java}` is not on PATH. "
            "Install a JDK 17 (for example `apt-get install openjdk-17-jdk-headless`)."
        )
    out = subprocess.run([exe, "-version"], capture_output=True, text=True, check=False)
    text = out.stderr + out.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        raise EnvironmentProblem(f"cannot parse the output of `{exe} -version`: {text.strip()!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_392" style
        major = int(m.group(2))
    return major


def require_java() -> None:
    major = java_major_version()
    if major < MIN_JAVA:
        raise EnvironmentProblem(
            f"Java {MIN_JAVA}+ is required (Kafka 4.x brokers and Spark 4.x), "
            f"but `java -version` reports {major}. Put a JDK 17 first on PATH."
        )


def resolve(jarset: JarSet, *, quiet: bool = True) -> Path:
    """Resolve one jar set with Maven unless it is already complete; return its folder."""
    if jarset.present:
        return jarset.folder
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentProblem(
            "Maven (`mvn`) is required once, to download the Kafka and Spark connector jars "
            "from Maven Central, but it is not on PATH. Install it (`apt-get install maven`) "
            "and run `make setup` again."
        )
    folder = jarset.folder
    if folder.exists():
        shutil.rmtree(folder)  # an interrupted earlier attempt
    version_prop = {"spark-kafka": "spark.version", "delta": "delta.version",
                    "postgres-jdbc": "jdbc.version"}.get(
        jarset.profile, "kafka.version")
    cmd = [
        mvn, "-B", *(["-q"] if quiet else []),
        "-gs", str(MAVEN_SETTINGS), "-f", str(POM), "-P", jarset.pom_profile or jarset.profile,
        f"-D{version_prop}={jarset.version}",
        *([f"-Dscala.binary.version={scala}"] if (scala := scala_binary(jarset)) else []),
        "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={folder}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not any(folder.glob("*.jar")):
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise CommandFailed(
            command=cmd,
            returncode=proc.returncode,
            output_tail=tail,
            hint=(
                "Maven could not resolve the jars from Maven Central. Check the network or "
                "your ~/.m2/settings.xml mirrors, then retry with `make setup` "
                "(a partial download is discarded and redone)."
            ),
        )
    (folder / ".complete").write_text(" ".join(cmd) + "\n")
    return folder



#: the Java load generator's Maven project (plain Java on kafka-clients)
JAVA_GENERATOR = PROJECT_ROOT / "producers" / "java"
#: the Java applications under test (issue 47): the copier and the Kafka Streams presets
JAVA_APPS = PROJECT_ROOT / "producers" / "java-apps"


@dataclass(frozen=True)
class MavenProject:
    """A Maven project of ours built into a jar set (its jar beside its runtime classpath)."""

    folder: Path
    build_prop: str  # the pom's property naming where Maven builds
    jar: str  # the jar Maven makes
    what: str  # for messages
    #: sources that need a newer kafka-clients than some users run: (the first release
    #: with their API, the pom's ``apps.excludes`` pattern), left out before that release
    needs: tuple[tuple[int, int], str] | None = None

    def left_out(self, version: str) -> list[str]:
        """Maven's ``-D`` for the sources left out against kafka-clients ``version``."""
        if self.needs is None:
            return []
        first, pattern = self.needs
        nums = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
        return [f"-Dapps.excludes={pattern}"] if nums < first else []

    def digest(self) -> str:
        import hashlib

        h = hashlib.sha256()
        for f in sorted([self.folder / "pom.xml", *(self.folder / "src").rglob("*")]):
            if f.is_file():
                h.update(str(f.relative_to(self.folder)).encode() + b"\0" + f.read_bytes())
        return h.hexdigest()[:16]


GENERATOR_PROJECT = MavenProject(JAVA_GENERATOR, "generator.build.dir",
                                 "verifier-java-generator.jar", "the Java generator")
APPS_PROJECT = MavenProject(JAVA_APPS, "apps.build.dir", "verifier-java-apps.jar",
                            "the Java applications (copier, Kafka Streams)",
                            # the share copier and share offsets: KIP-932's consumer and Admin
                            needs=((4, 1), "verifier/apps/Share*.java"))


def java_apps_jars(version: str | None = None) -> JarSet:
    """The Java applications under test (``producers/java-apps``) and their runtime
    classpath, built against kafka-clients and kafka-streams ``version`` (default
    :func:`clients_version`) into ``.jars/java-apps-<version>``."""
    return JarSet("java-apps", version or clients_version())


def project_built(project: MavenProject, jarset: JarSet) -> bool:
    """Built from the current sources (the marker names their digest)."""
    marker = jarset.folder / ".complete"
    return marker.exists() and marker.read_text().startswith(project.digest())


def build_project(project: MavenProject, jarset: JarSet) -> Path:
    """Compile ``project`` against Kafka at the set's version and copy it with its runtime
    dependencies into the set's folder (once per source change)."""
    if project_built(project, jarset):
        return jarset.folder
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentProblem(f"Maven (`mvn`) is required once, to build {project.what} "
                                 "against kafka-clients; install it and run `make setup` again.")
    folder = jarset.folder
    if folder.exists():
        shutil.rmtree(folder)
    build = folder / "build"
    cmd = [
        mvn, "-B", "-q", "-gs", str(MAVEN_SETTINGS), "-f", str(project.folder / "pom.xml"),
        f"-Dkafka.clients.version={jarset.version}", f"-D{project.build_prop}={build}",
        *project.left_out(jarset.version), "package",
        "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={folder}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    jar = build / project.jar
    if proc.returncode != 0 or not jar.exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise CommandFailed(command=cmd, returncode=proc.returncode, output_tail=tail,
                            hint=f"Maven could not build {project.what} "
                                 f"({project.folder.relative_to(PROJECT_ROOT)}) against "
                                 f"kafka-clients {jarset.version}: is that version on "
                                 "Maven Central (KAFKA_CLIENTS_VERSION)? Retry `make setup`.")
    shutil.copy2(jar, folder / jar.name)
    shutil.rmtree(build)
    (folder / ".complete").write_text(project.digest() + " " + " ".join(cmd) + "\n")
    return folder


def java_generator_built(jarset: JarSet | None = None) -> bool:
    return project_built(GENERATOR_PROJECT, jarset or java_generator_jars())


def build_java_generator(jarset: JarSet | None = None) -> Path:
    return build_project(GENERATOR_PROJECT, jarset or java_generator_jars())
