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


def _plan_file(tmp_path):
    from verifier.rundata.plan import PlannedProducer, RunPlan

    security = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                "sasl_plain_username": "u", "sasl_plain_password": "hunter2"}
    plan = RunPlan(run="r", scenario="s", seed=3, sink="exactly-once",
                   bootstrap_servers="127.0.0.1:1", security=security,
                   producers={"idempotent-0": PlannedProducer("idempotent-0", "idempotent",
                                                              "idempotent", "t")},
                   workload={"rate": 10.0, "record_size": 50, "txn_size": 5,
                             "abort_fraction": 0.0})
    return plan.write(tmp_path / "config.json"), plan.child_env()


def test_a_generator_reads_its_run_from_the_plan(tmp_path):
    import os

    path, env = _plan_file(tmp_path)
    r = subprocess.run([sys.executable, "-m", "producers", "--plan", str(path), "--pid",
                        "idempotent-0", "--count", "1", "--connect-timeout", "1"],
                       capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60,
                       env={**os.environ, **env})
    assert r.returncode == 2, r.stderr
    assert "cannot reach Kafka at 127.0.0.1:1" in r.stderr
    assert '"security_protocol":"SASL_PLAINTEXT"' in r.stdout  # the plan's security
    assert '"sasl_plain_password":"***"' in r.stdout and '"record_size":50' in r.stdout
    assert "hunter2" not in r.stdout + r.stderr


def test_plan_and_planned_flags_do_not_mix(tmp_path, capsys):
    path, _ = _plan_file(tmp_path)
    assert verifier_main(["produce", "--plan", str(path), "--pid", "idempotent-0",
                          "--mode", "idempotent"]) == 64
    assert "--mode: given by the plan" in capsys.readouterr().err
    assert verifier_main(["produce", "--plan", str(path), "--pid", "idempotent-0"]) == 64
    assert "VERIFIER_CLIENT_SECRETS does not carry it" in capsys.readouterr().err
    assert verifier_main(["produce", "--pid", "p", "--mode", "idempotent"]) == 64
    assert "--run-dir, --run-id, --topic, --bootstrap-servers required" in \
        capsys.readouterr().err
