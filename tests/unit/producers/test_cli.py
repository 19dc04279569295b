"""Exit codes of ``python -m producers`` and ``verifier produce`` without a cluster."""

from __future__ import annotations

import subprocess
import sys

from verifier.cli import main as verifier_main
from verifier.rundata.jvm import PROJECT_ROOT

BASE = ["--run-id", "r", "--mode", "idempotent", "--pid", "idempotent-0", "--topic", "t",
        "--bootstrap-servers", "127.0.0.1:1"]


def _run(tmp_path, *extra):
    return subprocess.run([sys.executable, "-m", "producers", "--run-dir", str(tmp_path), *BASE,
                           *extra], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)


def test_unreachable_cluster_is_one_line_and_exit_2(tmp_path):
    r = _run(tmp_path, "--count", "1", "--connect-timeout", "1")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "producers: error: cannot reach Kafka at 127.0.0.1:1: KafkaTimeoutError: Unable to "
        "bootstrap from ['127.0.0.1:1']"]
    assert "Traceback" not in r.stdout + r.stderr


def test_usage_errors_exit_64_and_print_config_redacted(tmp_path):
    r = _run(tmp_path, "--set", "acks=1")
    assert r.returncode == 64 and "acks=1" in r.stderr and "enable.idempotence=true" in r.stderr
    assert _run(tmp_path, "--count", "-1").returncode == 64
    assert _run(tmp_path, "--mode", "nope").returncode == 64
    r = _run(tmp_path, "--count", "1", "--connect-timeout", "1",
             "--set", "sasl.password=hunter2", "--set", "security.protocol=SASL_PLAINTEXT",
             "--set", "sasl.mechanism=PLAIN", "--set", "sasl.username=u")
    assert '"sasl_plain_password":"***"' in r.stdout
    assert "hunter2" not in r.stdout + r.stderr
    assert not list(tmp_path.rglob("*.jsonl")), "nothing written when the cluster is unreachable"


def test_verifier_produce_subcommand_shares_the_flags(capsys):
    assert verifier_main(["produce", "--run-dir", "/nonexistent", *BASE, "--set", "foo=1"]) == 64
    assert "unknown producer properties: foo" in capsys.readouterr().err
