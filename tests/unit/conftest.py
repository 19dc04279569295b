"""The unit tier starts no JVM (issue 39): pure Python parts only, tiny hand-written cases.

A one-line change to a pure definition must not wait for Spark to start. Every unit
test is checked when it ends: a JVM process (``java``) below this pytest process that was
not there when the test began fails it, naming the process. Tests that need Spark or
Kafka belong to tests/integration (the batch pass keeps its own tests there, on the same
hand-written cases: tests/integration/judge/test_batch_pass.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children of each of its threads, recursively)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(c) for c in (task / "children").read_text().split()]
            except OSError:  # the thread or process ended meanwhile
                continue
            out += kids
            todo += kids
    return out


def jvms(pid: int | None = None) -> dict[int, str]:
    """The JVMs below ``pid`` (default: this process): pid -> command line."""
    found = {}
    for p in descendants(os.getpid() if pid is None else pid):
        try:
            if Path(f"/proc/{p}/comm").read_text().strip() != "java":
                continue
            found[p] = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return found


@pytest.fixture(autouse=True)
def _no_jvm_started():
    before = set(jvms())
    yield
    new = {p: cmd for p, cmd in jvms().items() if p not in before}
    if new:
        pytest.fail("the unit tier starts no JVM, this test left one running: "
                    + "; ".join(f"pid {p}: {cmd[:200]}" for p, cmd in new.items())
                    + " (a test that needs Spark or Kafka belongs to tests/integration)",
                    pytrace=False)


@pytest.fixture
def spark():
    """Refused here: the session-wide SparkSession is the integration tier's."""
    pytest.fail("the unit tier starts no Spark session (no JVM): move this test to "
                "tests/integration", pytrace=False)
