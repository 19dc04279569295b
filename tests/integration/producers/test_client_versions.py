"""The client version as a dimension (issue 33) on the real cluster: the Java generator
built on first use against a second kafka-clients release, side by side with the pinned
one, runs a transactional load with the same history contract; and it is the client
version that decides whether transactions bump the epoch (KIP-890 part 2, what
KAFKA-17754's rows depend on). A version that does not exist is refused before anything
starts, saying what was tried."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from producers.clients import JAVA_MAIN, JAVA_OPTS, require_built
from tests.integration.producers.helpers import check_one_clean_session, history, run_to_end
from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics
from verifier.rundata import jvm
from verifier.rundata.jvm import PROJECT_ROOT

pytestmark = pytest.mark.integration

#: the second kafka-clients release: the last 3.x line, before transaction version 2
OLD = "3.9.1"
N = 120


def _java(version: str, run_dir, bootstrap: str, topic: str, pid: str) -> ManagedProcess:
    argv = [jvm.java_executable(), *JAVA_OPTS, "-cp", jvm.java_generator_jars(version).classpath(),
            JAVA_MAIN, "--run-dir", str(run_dir), "--run-id", "it", "--mode", "transactional",
            "--pid", pid, "--topic", topic, "--bootstrap-servers", bootstrap, "--count", str(N),
            "--txn-size", "10", "--abort-fraction", "0.25", "--seed", "5"]
    return ManagedProcess(pid, argv, run_dir / "logs" / f"{pid}.log", cwd=PROJECT_ROOT)


def _epochs(run_dir, pid: str) -> list[int]:
    return [e["epoch"] for e in history(run_dir, pid).events if e["type"] == "producer-id"]


def test_a_second_kafka_clients_version_builds_and_runs_beside_the_pinned_one(
        bootstrap, topic_name, tmp_path):
    said: list[str] = []
    require_built(f"java:{OLD}", said.append)  # built on first use (cached after)
    assert jvm.java_generator_built(jvm.java_generator_jars(OLD))
    assert not said or "kafka-clients 3.9.1" in said[0], said
    require_built("java")  # the pinned one stays as it was
    create_topics(bootstrap, {topic_name: 3, topic_name + "-old": 3}, replication_factor=3)
    old, new = f"transactional-java-{OLD}-0", "transactional-java-0"
    run_to_end(_java(OLD, tmp_path, bootstrap, topic_name + "-old", old), timeout=120)
    run_to_end(_java(jvm.clients_version(), tmp_path, bootstrap, topic_name, new), timeout=120)

    h = check_one_clean_session(tmp_path, bootstrap, topic_name + "-old", "transactional",
                                old, N)
    session = next(e for e in h.events if e["type"] == "session")
    assert (session["client"], session["client_version"]) == ("java", OLD)
    pinned = next(e for e in history(tmp_path, new).events if e["type"] == "session")
    assert pinned["client_version"] == jvm.clients_version()
    if jvm.parse_kafka_version(jvm.kafka_version())[0] >= 4 and \
            jvm.parse_kafka_version(jvm.clients_version())[0] >= 4:
        # on a new 4.x cluster (transaction version 2) the 4.x client bumps the epoch at
        # every transaction; the 3.9.1 client keeps one epoch for all of them: the client
        # side of KIP-890 part 2, which KAFKA-17754's rows name
        assert len(set(_epochs(tmp_path, new))) > 1, _epochs(tmp_path, new)
    assert len(set(_epochs(tmp_path, old))) == 1, _epochs(tmp_path, old)


def test_a_version_that_does_not_exist_is_refused_before_anything_starts(tmp_path):
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "verifier"), "chaos",
         "--clients", "java:3.9.1,java:0.0.7", "--scenario", "baseline", "--base-port", "29590",
         "--state-dir", str(tmp_path / "state"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "kafka-clients:0.0.7" in text and "tried" in text, text
    # no cluster started (its state folder is made at the start) and no run folder written
    assert not (tmp_path / "state").exists(), text
    assert not any((tmp_path / "out").iterdir()), text


def test_the_java_applications_build_against_the_oldest_client_the_grid_names(tmp_path):
    """producers/java-apps at kafka-clients 3.9.1 (KAFKA-17754's client: `verifier explore
    --client java:3.9.1` runs the copier on it). The share copier (KIP-932, 4.1+) had
    broken that build unnoticed; it is left out there, and asking for it says why."""
    jars = jvm.java_apps_jars(OLD)
    jvm.build_project(jvm.APPS_PROJECT, jars)  # built once; cached by its sources' digest
    assert jvm.project_built(jvm.APPS_PROJECT, jars)
    env = {"VERIFIER_BOOTSTRAP_SERVERS": "127.0.0.1:1", "VERIFIER_INPUT_TOPICS": "a",
           "VERIFIER_OUTPUT_TOPIC": "b", "VERIFIER_GROUP_ID": "g",
           "VERIFIER_TRANSACTIONAL_ID_PREFIX": "t", "VERIFIER_STATE_FILE": str(tmp_path / "s")}
    done = subprocess.run([jvm.java_executable(), "-cp", jars.classpath(), "verifier.apps.Main",
                           "share-copier"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 64, done.stdout + done.stderr
    assert "share groups need kafka-clients 4.1+" in done.stderr, done.stderr
