"""The Kafka image of the docker environment, built on this machine (no registry).

Two layers, each built once and reused while its inputs are unchanged:

- a Java base image ``delivery-verifier-jre:<java version>``: a root file system made of
  the tool's own JDK (the one every JVM of the tool runs on) and the shared libraries it
  and a few small programs (``sh``, ``mkdir``, ``cat``, ``ls``, ``rm``) load, found with
  ``ldd`` and imported with ``docker import``;
- the Kafka image ``delivery-verifier-kafka:<kafka version>``: that base plus the very
  broker jars Maven resolved for the embedded cluster (``.jars/broker-<version>``), the
  log configuration and ``compose/kafka-entrypoint.sh``, built by the classic builder
  (testcontainers' ``DockerImage``; no BuildKit).

Each image carries a label with the digest of its inputs; an image whose label matches is
reused, a stale one is rebuilt under the same tag.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from verifier.rundata import jvm
from verifier.rundata.errors import EnvironmentProblem

JRE_REPO = "delivery-verifier-jre"
KAFKA_REPO = "delivery-verifier-kafka"
DIGEST_LABEL = "org.delivery-verifier.inputs"
ENTRYPOINT = jvm.PROJECT_ROOT / "compose" / "kafka-entrypoint.sh"
#: bumped when the recipe below changes in a way the inputs' digest does not see
RECIPE = "2"

#: small programs in the base image: the entrypoint's shell, and a few for a human who
#: opens a shell in a broker container
TOOLS = ("sh", "mkdir", "cat", "ls", "rm")
#: JDK libraries Kafka never loads (graphics, sound, smart cards, SCTP, the debugger
#: agent): copied, but their dependencies (X11, ALSA, ...) are not followed
UNUSED_JDK_LIBS = {"libawt_xawt.so", "libatk-wrapper.so", "libsplashscreen.so", "libjsound.so",
                   "libjawt.so", "libfontmanager.so", "liblcms.so", "libjavajpeg.so",
                   "libmlib_image.so", "libawt.so", "libj2pcsc.so", "libsctp.so",
                   "libsaproc.so"}
#: JDK parts the broker does not need at run time
SKIP_JDK = {"jmods", "include", "man", "docs", "demo", "src.zip", "ct.sym", "legal"}

PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n"


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    image_id: str
    built: bool  # False: an existing image with the same inputs was reused
    seconds: float


def java_home() -> Path:
    """The JDK the tool runs on (JAVA_HOME, else the ``java`` on PATH)."""
    home = jvm.java_home()
    if home is None:
        raise EnvironmentProblem("no java on PATH to build the broker image from")
    return home


def java_release(home: Path) -> str:
    """``17.0.15`` from the JDK's ``release`` file (the base image's tag)."""
    try:
        for line in (home / "release").read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"java{jvm.java_major_version()}"


def _ldd(paths: Iterable[Path]) -> set[str]:
    """Every shared library ``paths`` load, as ``ldd`` resolves them on this machine."""
    libs: set[str] = set()
    for path in paths:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False)
        for line in out.stdout.splitlines():
            parts = line.split()
            if "=>" in parts:
                target = parts[parts.index("=>") + 1]
                if target.startswith("/"):
                    libs.add(target)
            elif parts and parts[0].startswith("/"):
                libs.add(parts[0])  # the dynamic loader
    return libs


def _in_image(host_path: str) -> str:
    """Where a host library goes in the image: its real folder (merged /usr) and the
    name the loader asked for, e.g. /lib/x86_64-linux-gnu/libz.so.1 ->
    usr/lib/x86_64-linux-gnu/libz.so.1."""
    folder = os.path.realpath(os.path.dirname(host_path))
    return os.path.join(folder, os.path.basename(host_path)).lstrip("/")


class _Rootfs:
    """A tar of a root file system, written entry by entry (owner root)."""

    def __init__(self, fileobj) -> None:
        self.tar = tarfile.open(fileobj=fileobj, mode="w")
        self.names: set[str] = set()

    def _info(self, name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.uid, info.gid, info.mtime = kind, mode, 0, 0, 0
        return info

    def folder(self, name: str, mode: int = 0o755) -> None:
        name = name.strip("/")
        parent = os.path.dirname(name)
        if parent and parent not in self.names:
            self.folder(parent)
        if name and name not in self.names:
            self.names.add(name)
            self.tar.addfile(self._info(name, tarfile.DIRTYPE, mode))

    def link(self, name: str, target: str) -> None:
        self.names.add(name)
        info = self._info(name, tarfile.SYMTYPE, 0o777)
        info.linkname = target
        self.tar.addfile(info)

    def text(self, name: str, content: str, mode: int = 0o644) -> None:
        data = content.encode()
        self.folder(os.path.dirname(name))
        info = self._info(name, tarfile.REGTYPE, mode)
        info.size = len(data)
        self.names.add(name)
        self.tar.addfile(info, io.BytesIO(data))

    def file(self, name: str, host_path: str | Path) -> bool:
        """A host file's content (symbolic links followed); False if it does not exist."""
        name = name.strip("/")
        if name in self.names:
            return True
        real = os.path.realpath(host_path)
        if not os.path.isfile(real):
            return False
        self.folder(os.path.dirname(name))
        st = os.stat(real)
        info = self._info(name, tarfile.REGTYPE, st.st_mode & 0o7777)
        info.size = st.st_size
        with open(real, "rb") as fh:
            self.tar.addfile(info, fh)
        self.names.add(name)
        return True

    def tree(self, name: str, host_dir: Path, skip: set[str] = frozenset()) -> None:
        """A host folder, symbolic links followed; dangling links left out."""
        self.folder(name)
        for entry in sorted(os.listdir(host_dir)):
            if entry in skip:
                continue
            src = host_dir / entry
            dest = f"{name}/{entry}"
            if os.path.isdir(src):
                self.tree(dest, src)
            else:
                self.file(dest, src)

    def close(self) -> None:
        self.tar.close()


def write_jre_rootfs(fileobj, home: Path) -> list[str]:
    """The base image's root file system as a tar on ``fileobj``; returns the host
    libraries it holds (for the log)."""
    fs = _Rootfs(fileobj)
    for top in ("usr/bin", "usr/lib", "usr/lib64", "etc", "tmp", "root", "proc", "sys", "dev",
                "var/lib/kafka", "opt/kafka/config"):
        fs.folder(top, 0o1777 if top == "tmp" else 0o755)
    for alias in ("bin", "lib", "lib64", "sbin"):  # merged /usr, as Debian has it
        fs.link(alias, "usr/bin" if alias in ("bin", "sbin") else f"usr/{alias}")
    fs.tree("opt/java", home, skip=SKIP_JDK)
    tools = []
    for tool in TOOLS:
        path = shutil.which(tool)
        if path is None:
            raise EnvironmentProblem(f"building the broker image needs `{tool}` on this machine")
        fs.file(f"usr/bin/{tool}", path)
        tools.append(Path(path))
    jdk_libs = [p for p in home.rglob("*.so") if p.name not in UNUSED_JDK_LIBS]
    libs = _ldd([home / "bin" / "java", *jdk_libs, *tools])
    libs = {lib for lib in libs if not lib.startswith(str(home))}
    for lib in sorted(libs):
        fs.file(_in_image(lib), lib)
    cacerts = Path("/etc/ssl/certs/java/cacerts")
    if cacerts.exists():
        fs.file("etc/ssl/certs/java/cacerts", cacerts)
    fs.text("etc/passwd", PASSWD)
    fs.text("etc/group", GROUP)
    fs.text("etc/nsswitch.conf", NSSWITCH)
    fs.close()
    return sorted(libs)


# ----- the images ------------------------------------------------------------------------

def _digest(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _existing(client, tag: str, digest: str):
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return image if (image.labels or {}).get(DIGEST_LABEL) == digest else None


def jre_image(client, log=print) -> BuiltImage:
    """The Java base image for this machine's JDK; imported once, then reused."""
    home = java_home()
    release = java_release(home)
    digest = _digest(RECIPE, str(home), release, TOOLS, sorted(UNUSED_JDK_LIBS))
    tag = f"{JRE_REPO}:{release}"
    t0 = time.monotonic()
    found = _existing(client, tag, digest)
    if found is not None:
        return BuiltImage(tag, found.id, False, time.monotonic() - t0)
    log(f"building {tag} from {home} (root file system tarred from this machine)")
    with tempfile.TemporaryDirectory(prefix="verifier-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        with open(rootfs, "wb") as fh:
            write_jre_rootfs(fh, home)
        changes = [f"LABEL {DIGEST_LABEL}={digest}", "ENV JAVA_HOME=/opt/java",
                   "ENV PATH=/opt/java/bin:/usr/bin", 'CMD ["/bin/sh"]']
        resp = client.api.import_image_from_file(str(rootfs), repository=JRE_REPO,
                                                 tag=release, changes=changes)
    image = client.images.get(tag)
    if image is None:  # pragma: no cover - the daemon said why in resp
        raise EnvironmentProblem(f"docker import of {tag} failed: {resp}")
    return BuiltImage(tag, image.id, True, time.monotonic() - t0)


def _log4j_config(version: str) -> Path:
    return jvm.LOG4J1_CONFIG if _uses_log4j1(version) else jvm.LOG4J_CONFIG


def _uses_log4j1(version: str) -> bool:
    return int(version.split(".")[0]) < 4


DOCKERFILE = """\
FROM {base}
COPY libs/ /opt/kafka/libs/
COPY {log4j} /opt/kafka/config/{log4j}
COPY kafka-entrypoint.sh /opt/kafka/kafka-entrypoint.sh
ENV KAFKA_LOG4J_OPTS={log4j_opt}
LABEL org.opencontainers.image.title="Apache Kafka {version} (delivery-verifier)" \\
      org.apache.kafka.version="{version}" \\
      {label}="{digest}"
EXPOSE 9092 9093 9094
ENTRYPOINT ["/bin/sh", "/opt/kafka/kafka-entrypoint.sh"]
"""


def kafka_image(client, version: str | None = None, log=print) -> BuiltImage:
    """``delivery-verifier-kafka:<version>`` from the jars Maven resolved; built once
    (seconds when the base exists), reused while jars, entrypoint and base are the same."""
    from testcontainers.core.image import DockerImage

    version = version or jvm.kafka_version()
    jars = jvm.resolve(jvm.broker_jars(version))
    base = jre_image(client, log)
    log4j = _log4j_config(version)
    jar_list = sorted((p.name, p.stat().st_size) for p in Path(jars).glob("*.jar"))
    digest = _digest(RECIPE, base.image_id, jar_list, ENTRYPOINT.read_text(),
                     log4j.read_text(), DOCKERFILE)
    tag = f"{KAFKA_REPO}:{version}"
    t0 = time.monotonic()
    found = _existing(client, tag, digest)
    if found is not None:
        return BuiltImage(tag, found.id, False, time.monotonic() - t0)
    log(f"building {tag} from {jars}")
    with tempfile.TemporaryDirectory(prefix="verifier-image-") as tmp:
        ctx = Path(tmp)
        (ctx / "libs").mkdir()
        for jar in Path(jars).glob("*.jar"):
            shutil.copy2(jar, ctx / "libs" / jar.name)
        shutil.copy2(log4j, ctx / log4j.name)
        shutil.copy2(ENTRYPOINT, ctx / ENTRYPOINT.name)
        opt = ("-Dlog4j.configuration=file:/opt/kafka/config/" if _uses_log4j1(version)
               else "-Dlog4j2.configurationFile=/opt/kafka/config/") + log4j.name
        (ctx / "Dockerfile").write_text(DOCKERFILE.format(
            base=base.tag, log4j=log4j.name, log4j_opt=opt, version=version,
            label=DIGEST_LABEL, digest=digest))
        # the classic builder (the API's /build), on the engine DOCKER_HOST names
        DockerImage(path=str(ctx), tag=tag, clean_up=False).build()
    image = client.images.get(tag)
    return BuiltImage(tag, image.id, True, time.monotonic() - t0 + base.seconds)


def remove_images(client, version: str | None = None) -> list[str]:
    """Remove the Kafka image of ``version`` and the Java base (``image --force``)."""
    import docker.errors

    removed = []
    tags = [f"{KAFKA_REPO}:{version or jvm.kafka_version()}",
            f"{JRE_REPO}:{java_release(java_home())}"]
    for tag in tags:
        try:
            client.images.remove(tag, force=True)
            removed.append(tag)
        except docker.errors.ImageNotFound:
            pass
    return removed
