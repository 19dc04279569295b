"""The client dimension in a run's plan: --client names every column's generator,
--clients puts the same modes of several clients side by side under the same faults."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from producers.clients import client_version, generator_argv
from verifier.orchestration.planning import RunOptions, _resolve_faults, plan_producers
from verifier.orchestration.scenario import load_scenario, parse_scenario
from verifier.rundata import jvm
from verifier.rundata.errors import UsageError
from verifier.rundata.plan import RunPlan, read_plan

ENV = SimpleNamespace(skipped_kinds=lambda: set())


def test_one_client_keeps_the_columns_and_names_the_client(tmp_path):
    s = parse_scenario("[workload]\nmodes = ['idempotent', 'transactional']", "x")
    plans = plan_producers(s, "r1", RunOptions(out=Path("o"), client="java"))
    assert [(p.pid, p.mode, p.topic, p.client) for p in plans] == [
        ("idempotent-0", "idempotent", "r1.idempotent", "java"),
        ("transactional-0", "transactional", "r1.transactional", "java"),
    ]
    assert plans[0].client_version == jvm.clients_version()
    plan = RunPlan(run="r1", scenario="x", seed=1, sink="exactly-once",
                   bootstrap_servers="127.0.0.1:1", producers={p.pid: p for p in plans})
    back = read_plan(plan.write(tmp_path / "config.json"))
    assert back.producer("idempotent-0").client == "java"
    assert back.producer("idempotent-0").client_version == jvm.clients_version()


def test_several_clients_side_by_side_share_the_faults():
    s = load_scenario("producer-kill")
    opts = RunOptions(out=Path("o"), clients=("java", "kafka-python"))
    plans = plan_producers(s, "r1", opts)
    cols = {p.mode: (p.pid, p.expect, p.topic, p.client) for p in plans}
    assert cols["idempotent/java"] == ("idempotent-java-0", "idempotent",
                                       "r1.idempotent.java", "java")
    assert cols["transactional/kafka-python"] == (
        "transactional-kafka-python-0", "transactional", "r1.transactional.kafka-python",
        "kafka-python")
    assert len(plans) == 2 * len(s.workload.modes)
    processes = {p.process_name for p in plans} | {"observer"}
    specs, skipped = _resolve_faults(s, plans, "r1", ENV, processes)
    killed = sorted(sp.target["process"] for sp in specs)
    # every producer-kill of the scenario hits that mode's generator of both clients
    assert killed == sorted(f"producer:{m}/{c}" for m in s.workload.modes
                            for c in ("java", "kafka-python")), killed
    assert not skipped


def test_generator_commands():
    java = generator_argv("java", Path("R/config.json"), "idempotent-0")
    assert java[0] == jvm.java_executable() and "verifier.generator.Main" in java
    assert java[-4:] == ["--plan", "R/config.json", "--pid", "idempotent-0"]
    assert generator_argv("kafka-python", Path("R/config.json"), "p")[-6:] == [
        "-m", "producers", "--plan", "R/config.json", "--pid", "p"]
    assert client_version("kafka-python")
    with pytest.raises(UsageError, match="unknown client"):
        generator_argv("librdkafka-ish", Path("x"), "p")


def test_a_java_users_file_runs_verbatim_and_is_checked_mapped(tmp_path):
    from producers.properties import read_user_config
    from verifier.orchestration.planning import validate_scenario

    f = tmp_path / "app.properties"
    f.write_text("bootstrap.servers=kafka:9092\n"
                 "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
                 "value.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
                 "acks=all\nenable.idempotence=true\ncompression.type=lz4\n")
    u = read_user_config(f, "java")
    opts = RunOptions(out=Path("o"), client="java", user_config=f, user_mode="idempotent",
                      user_settings=u.settings, user_overrides=u.overrides,
                      user_notes=u.notes)
    s = parse_scenario("[workload]\nmodes = ['idempotent']", "x")
    user = plan_producers(s, "r1", opts)[-1]
    assert (user.mode, user.expect, user.client) == ("user:app.properties", "idempotent", "java")
    assert user.overrides == {"acks": "all", "enable.idempotence": "true",
                              "compression.type": "lz4"}
    env = SimpleNamespace(skipped_kinds=lambda: set(), client_config={})
    assert validate_scenario(s, opts, env) == []
    bad = RunOptions(out=Path("o"), client="java", user_config=f, user_mode="at-most-once",
                     user_settings=u.settings, user_overrides=u.overrides)
    assert any("your producer config" in p for p in validate_scenario(s, bad, env))


def test_an_error_answer_naming_a_mode_by_client_id_hits_each_clients_generator():
    """kafka-19479: `client_id = "@at-least-once"` is one error-answer fault per
    at-least-once generator, on its own client id, so each client's requests are refused."""
    s = load_scenario("kafka-19479")
    opts = RunOptions(out=Path("o"), clients=("java:4.1.0", "java:4.1.1"))
    plans = plan_producers(s, "r1", opts)
    processes = {p.process_name for p in plans} | {"observer"}
    specs, _ = _resolve_faults(s, plans, "r1", ENV, processes)
    assert sorted(sp.params["client_id"] for sp in specs) == [
        f"verifier.generator.{p.pid}" for p in plans]
    assert len(specs) == 2
    assert {sp.params["every"] for sp in specs} == {s.faults[0]["params"]["every"]} == {1}
