"""The unit tier's own guard (tests/unit/conftest.py): a JVM below the pytest process is
seen, and none runs while the unit tests do (issue 39)."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tests.unit.conftest import jvms
from verifier.rundata.waiting import wait_until


def test_a_process_named_java_below_this_one_is_seen(tmp_path):
    fake = tmp_path / "java"  # what the kernel calls a process is its program's file name
    fake.symlink_to(shutil.which("sleep"))
    proc = subprocess.Popen([str(fake), "30"])
    try:
        # seen once the child has exec'd (before, it is still a copy of python)
        wait_until(lambda: (list(jvms()) == [proc.pid], list(jvms())), timeout=10,
                   what="the fake JVM to be seen", expected=f"[{proc.pid}]", interval=0.01)
    finally:
        proc.kill()
        proc.wait()
    assert proc.pid not in jvms()


def test_no_spark_session_and_no_jvm_in_the_unit_tier():
    context = sys.modules.get("pyspark.context")
    assert context is None or context.SparkContext._active_spark_context is None
    assert jvms() == {}
