"""The CLI's error paths: exit codes and messages, no tracebacks, no JVM."""

from __future__ import annotations

import pytest

from verifier.cli import EXIT_USAGE, main
from verifier.rundata import jvm
from verifier.rundata.errors import EnvironmentProblem


def test_bad_node_count_is_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["cluster", "up", "--nodes", "2"])
    assert exc.value.code == EXIT_USAGE
    assert "invalid choice" in capsys.readouterr().err


def test_unknown_command_is_usage_error():
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == EXIT_USAGE


def test_status_without_cluster(tmp_path, capsys):
    assert main(["cluster", "status", "--state-dir", str(tmp_path)]) == 2
    assert "no cluster in" in capsys.readouterr().err


def test_down_without_cluster_is_fine(tmp_path, capsys):
    assert main(["cluster", "down", "--state-dir", str(tmp_path)]) == 0
    assert "nothing to stop" in capsys.readouterr().out


def test_corrupt_state_file(tmp_path, capsys):
    (tmp_path / "cluster.json").write_text("{not json")
    assert main(["cluster", "status", "--state-dir", str(tmp_path)]) == 2
    assert "cannot read cluster state" in capsys.readouterr().err


def test_missing_java_is_explained(monkeypatch):
    jvm.java_major_version.cache_clear()
    monkeypatch.delenv("JAVA_HOME", raising=False)  # JAVA_HOME would win over PATH
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentProblem, match="Java 17"):
        jvm.require_java()
    jvm.java_major_version.cache_clear()


def test_old_java_is_explained(monkeypatch, tmp_path):
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    fake.chmod(0o755)
    jvm.java_major_version.cache_clear()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentProblem, match="reports 11"):
        jvm.require_java()
    jvm.java_major_version.cache_clear()


def test_missing_maven_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("VERIFIER_JARS_DIR", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)  # JAVA_HOME would win over PATH
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentProblem, match="Maven"):
        jvm.resolve(jvm.broker_jars())


def test_maven_failure_names_command_and_retry(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "mvn"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Could not transfer artifact: Unknown host' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("VERIFIER_JARS_DIR", str(tmp_path / "jars"))
    monkeypatch.setenv("PATH", str(fake.parent))
    with pytest.raises(EnvironmentProblem) as exc:
        jvm.resolve(jvm.broker_jars())
    text = str(exc.value)
    assert "copy-dependencies" in text and "Unknown host" in text and "make setup" in text
    assert not jvm.broker_jars().present
