"""`verifier chaos --plan` says what a run would create, use, need and delete on a cluster
before anything runs (verifier.cli.plan, issue 48). The plan's text is made from the
flags as ``chaos._prepare`` checks them; the external cluster is never reached here."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pytest

from verifier.cli.plan import plan_lines
from verifier.harness.environment import ExternalEnvironment
from verifier.harness.leftovers import OnCluster
from verifier.orchestration.planning import RunOptions
from verifier.orchestration.scenario import load_scenario
from verifier.rundata.naming import run_of

BS = "kafka.example:9093"


def _args():
    return argparse.Namespace(bootstrap_servers=BS, keep_topics=False)


def _opts(tmp_path, **kw):
    return RunOptions(out=tmp_path, seed=3, user_config=Path("service.properties"),
                      user_mode="transactional",
                      user_settings={"transactional_id": "orders-tx"}, **kw)


@pytest.fixture
def env():
    return ExternalEnvironment(BS, {"security_protocol": "SASL_SSL",
                                    "sasl_plain_username": "svc-verifier",
                                    "sasl_plain_password": "secret-pw"})


def _plan(tmp_path, env, names=("ack-loss", "producer-kill"), args=None, **opts):
    scenarios = [load_scenario(n) for n in names]
    found = OnCluster({"verifier-baseline-20261128T100000Z-s1": ["x"]}, {})
    return plan_lines(args or _args(), scenarios, env, _opts(tmp_path, **opts), 3, found)


def test_every_name_it_creates_or_uses_carries_the_runs_prefix(tmp_path, env):
    lines = _plan(tmp_path, env)
    created = [ln.split()[1] for ln in lines if ln.startswith("  topic ")]
    used = [ln.split()[2] for ln in lines if ln.startswith("  transactional id ")]
    groups = [ln.split()[1] for ln in lines if ln.startswith("  group ")]
    assert len(created) == 10 and len(used) == 4 and len(groups) == 2
    for name in created + used + groups:
        real = name.replace("<start>", "20261129T150102Z").replace("*", "x")
        assert run_of(real) == "verifier-" + real.split("verifier-")[1].split(".")[0], name
    assert "verifier-ack-loss-<start>-s3.orders-tx" in used  # the user's id as suffix
    assert not any(n.endswith(".orders-tx") and not n.startswith("verifier-") for n in used)
    assert any("3 partitions, replication 3" in ln for ln in lines)
    assert any("1 earlier runs of this tool" in ln for ln in lines)


def test_the_acls_are_one_kafka_acls_line_each_on_the_tools_prefix(tmp_path, env):
    lines = _plan(tmp_path, env)
    acls = [ln.strip() for ln in lines if ln.strip().startswith("kafka-acls.sh")]
    want = {("Create", "--topic"), ("Write", "--topic"), ("Read", "--topic"),
            ("Delete", "--topic"), ("Write", "--transactional-id"), ("Read", "--group"),
            ("Delete", "--group")}
    got = set()
    for line in acls:
        words = line.split()
        assert words[:5] == ["kafka-acls.sh", "--bootstrap-server", BS, "--add",
                             "--allow-principal"]
        assert words[5] == "'User:svc-verifier'"
        assert line.endswith("verifier- --resource-pattern-type prefixed")
        got.add((words[words.index("--operation") + 1], words[-4]))
    assert got == want
    assert not any("secret-pw" in ln for ln in lines)


def test_use_my_ids_plans_the_users_own_id_and_its_acl(tmp_path, env):
    lines = _plan(tmp_path, env, names=("baseline",), use_my_ids=True)
    assert any(ln.strip() == "transactional id orders-tx (YOUR OWN transactional.id, "
               "--use-my-ids)" for ln in lines)
    assert any(ln.strip().endswith("--operation Write --transactional-id orders-tx")
               for ln in lines)


def test_the_faults_that_cannot_run_on_an_external_cluster_say_why(tmp_path, env):
    lines = _plan(tmp_path, env, names=("ack-loss", "broker-kill", "producer-kill"))
    faults = lines[lines.index("faults:") + 1:]
    assert any(ln.startswith("  ack-loss: ack-loss on all") and "cannot run here: needs "
               "the fault proxy" in ln for ln in faults)
    assert any(ln.startswith("  broker-kill: broker-kill") and "cannot run here: signals "
               "the local cluster's broker processes" in ln for ln in faults)
    kills = [ln for ln in faults if ln.startswith("  producer-kill: producer-kill")]
    assert len(kills) == 4 and all(ln.endswith(": runs") for ln in kills)


def test_the_duration_and_what_it_deletes(tmp_path, env):
    s = load_scenario("baseline")
    s = replace(s, workload=replace(s.workload, duration_s=120))
    lines = plan_lines(_args(), [s], env, _opts(tmp_path, repeat=2), 3)
    (duration,) = [ln for ln in lines if ln.startswith("expected duration")]
    assert "about 6 min (2 runs, 240 s of load" in duration
    deletes = lines[lines.index("deletes:") + 1]
    assert "when the run ends" in deletes and "verifier cleanup" in deletes
    kept = plan_lines(argparse.Namespace(bootstrap_servers=BS, keep_topics=True), [s], env,
                      _opts(tmp_path), 3)
    assert "--keep-topics keeps the topics" in kept[kept.index("deletes:") + 1]


def test_the_applications_topics_groups_and_transactional_ids_are_in_the_plan(tmp_path, env):
    from verifier.rundata.apps import plan_apps

    apps = tuple(plan_apps("copier-transactional,streams-count-eos,copier-commit-after",
                           None, 2))
    lines = _plan(tmp_path, env, names=("instance-kill",), apps=apps)
    text = "\n".join(lines)
    rid = "verifier-instance-kill-<start>-s3"
    for name in ("copier-transactional", "streams-count-eos", "copier-commit-after"):
        assert f"  topic {rid}.app.{name}.out  " in text
        assert f"  group {rid}.app.{name}  " in text
    assert f"  topic {rid}.app.streams-count-eos.reference.out  " in text
    assert f"  topics {rid}.app.streams-count-eos-*  " in text
    assert f"  transactional ids {rid}.app.copier-transactional.*  " in text
    assert f"  transactional ids {rid}.app.streams-count-eos-*  " in text
    assert f"{rid}.app.copier-commit-after.*" not in text  # at-least-once: no transactions
    for ln in lines:
        if ln.startswith(("  topic ", "  group ", "  transactional ids ")):
            name = ln.split()[2] if ln.startswith("  transactional ids") else ln.split()[1]
            real = name.replace("<start>", "20261129T150102Z").replace("*", "x")
            assert run_of(real) == "verifier-" + real.split("verifier-")[1].split(".")[0]


def test_the_declared_input_topics_name_their_writer_and_its_transactional_id(tmp_path, env):
    from verifier.orchestration.pipeline_plan import plan_pipelines
    from verifier.orchestration.scenario import parse_scenario
    from verifier.rundata.jvm import PROJECT_ROOT

    orders = str(PROJECT_ROOT / "examples" / "pipelines" / "orders.py")
    s = parse_scenario('[workload]\nmodes = ["transactional"]\n', "txn-only")
    lines = plan_lines(_args(), [s], env, _opts(tmp_path, pipelines=tuple(plan_pipelines(
        (orders,), None)), clients=("java",)), 3)
    rid = "verifier-txn-only-<start>-s3"
    assert any(ln.startswith(f"  topic {rid}.in.orders  ") and "written by java, "
               "transactional" in ln for ln in lines)
    assert f"  transactional id {rid}.in-orders-0  (the writer of orders)" in lines
