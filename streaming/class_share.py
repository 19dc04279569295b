"""The Spark driver's class-data-sharing archive (JDK 13+ dynamic CDS): the classes a
driver loads at its start (Spark, Hadoop, Scala, Jackson; the archive is about 160 MB),
parsed and verified once and mapped by every later driver instead of loaded again.

Side by side on this 2-core machine (2026-11-30, PySpark 4.2.0, Java 17): a local session
started in 3.2-4.0 s against 6.3-7.7 s, and its first small job ran in 1.9-2.2 s against
3.5-4.6 s. Every run starts two drivers (the observer, the verification) and each
pipeline one, so a test suite starts a hundred.

``verifier setup`` dumps it (streaming/class_share_dump.py: a driver started with
``-XX:ArchiveClassesAtExit``, a few small jobs, stopped) into ``.jars/cds/``, named by
what it is valid for: the PySpark release, the Java build and the driver's jars (names,
sizes, times). Every Spark application the tool starts then maps it
(:func:`driver_options`, added by ``streaming.session.application_conf``). A JVM that
cannot use it (another Java, another classpath: ``spark.driver.extraClassPath``) starts
as without it; its CDS messages are turned off, so the user's terminal shows none.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from verifier.rundata import jvm

#: the options that say a driver already chose its own class sharing
OWN_CHOICE = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@lru_cache(maxsize=1)
def archive_path() -> Path:
    """Where the archive for this PySpark, Java and driver classpath lives (it may not
    exist yet)."""
    import pyspark

    h = hashlib.sha256()
    # the Java build, without starting a JVM: its home, its release file, its libjvm
    home = jvm.java_home() or Path("/nonexistent")
    h.update(str(home).encode())
    for part in (home / "release", home / "lib" / "server" / "libjvm.so"):
        if part.is_file():
            st = part.stat()
            h.update(f"{part.name} {st.st_size} {int(st.st_mtime)}\n".encode())
    for jar in sorted((_pyspark_home() / "jars").glob("*.jar")):
        st = jar.stat()
        h.update(f"{jar.name} {st.st_size} {int(st.st_mtime)}\n".encode())
    return jvm.jars_root() / "cds" / f"spark-{pyspark.__version__}-{h.hexdigest()[:12]}.jsa"


def driver_options(current: str = "") -> str:
    """``current`` (a driver's ``spark.driver.extraJavaOptions``) with the archive mapped,
    when it exists and the options make no class-sharing choice of their own."""
    if any(word in current for word in OWN_CHOICE):
        return current
    try:
        path = archive_path()
    except Exception:  # noqa: BLE001 - no Java or PySpark here: the driver will say so
        return current
    if not path.is_file():
        return current
    return f"{current} -XX:SharedArchiveFile={path} {QUIET}".strip()


def build() -> tuple[Path, bool]:
    """Dump the archive if it is missing: (its path, whether it was made now). The dump
    runs in a child process (its own driver), into a temporary file renamed at the end,
    so a driver never maps half an archive."""
    path = archive_path()
    if path.is_file():
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run([sys.executable, "-m", "streaming.class_share_dump", str(tmp)],
                          capture_output=True, text=True, check=False, timeout=600,
                          cwd=str(jvm.PROJECT_ROOT))
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise RuntimeError(f"the Spark driver's class archive could not be dumped "
                           f"(exit {proc.returncode}):\n{tail}")
    os.replace(tmp, path)
    for old in path.parent.glob("spark-*.jsa"):  # another PySpark's or Java's
        if old != path:
            old.unlink(missing_ok=True)
    return path, True
