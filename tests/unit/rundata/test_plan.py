"""The run plan: written once redacted, read back by children, secrets from the env."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from verifier.rundata.errors import UsageError
from verifier.rundata.formats import FORMATS, RunFormatError, read_json
from verifier.rundata.plan import (
    SECRETS_ENV,
    PlannedProducer,
    RunPlan,
    plan_from_json,
    plan_of,
    read_plan,
    read_plan_json,
    secrets_env,
)

SECURITY = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice", "sasl_plain_password": "s3cret-pw"}


def _plan() -> RunPlan:
    producers = {
        "idempotent-0": PlannedProducer("idempotent-0", "idempotent", "idempotent", "r.idem"),
        "user-0": PlannedProducer("user-0", "user:my.properties", "at-least-once", "r.user",
                                  {"acks": -1, "ssl_password": "key-pw", **SECURITY},
                                  "my.properties"),
    }
    return RunPlan(run="r", scenario="baseline", seed=7, sink="exactly-once",
                   bootstrap_servers="127.0.0.1:1", producers=producers,
                   workload={"rate": 50.0, "record_size": 100, "txn_size": 10,
                             "abort_fraction": 0.2},
                   security=SECURITY, spark_master="local[2]", environment="external",
                   extra={"notes": ["n"]})


def test_written_plan_is_redacted_and_reads_back(tmp_path):
    plan = _plan()
    path = plan.write(tmp_path / "config.json")
    text = path.read_text()
    assert "s3cret-pw" not in text and "key-pw" not in text
    doc = read_json(path, "run-config")
    assert doc["version"] == FORMATS["run-config"] == 1
    assert doc["security"]["sasl_plain_password"] == "***"
    assert doc["producers"]["user-0"]["overrides"]["ssl_password"] == "***"
    assert doc["producers"]["idempotent-0"] == {"mode": "idempotent", "expect": "idempotent",
                                                "topic": "r.idem",
                                                "process": "producer:idempotent",
                                                "client": "kafka-python"}
    back = read_plan(path)
    assert back.topics == ["r.idem", "r.user"] and back.workload["rate"] == 50.0
    assert back.extra == {"notes": ["n"]} and back.spark_master == "local[2]"


def test_children_get_the_secrets_from_the_environment(tmp_path):
    plan = _plan()
    env = plan.child_env()
    assert set(orjson.loads(env[SECRETS_ENV])) == {"sasl_plain_password", "ssl_password"}
    back = read_plan(plan.write(tmp_path / "config.json"))
    assert back.client_security(env) == SECURITY
    user = back.producer_overrides("user-0", env)
    assert user["ssl_password"] == "key-pw" and user["acks"] == -1
    assert back.producer_overrides("idempotent-0", env) == SECURITY
    with pytest.raises(UsageError, match="sasl_plain_password is redacted") as err:
        back.client_security({})
    assert "s3cret" not in str(err.value)
    with pytest.raises(UsageError, match="not in the plan"):
        back.producer("nope")


def test_no_secrets_no_environment():
    assert secrets_env({"security_protocol": "SSL", "ssl_cafile": "/ca.pem"}) == {}


RECORDED = Path(__file__).resolve().parents[2] / "data" / "runs"


def test_the_plans_facts_for_the_report_and_the_faults(tmp_path):
    from dataclasses import replace

    plan = _plan()
    user = replace(plan.producers["user-0"], client="java", client_version="4.1.1",
                   overrides={"client_id": "my-app"})
    plan = replace(plan, producers={**plan.producers, "user-0": user},
                   extra={"kafka_version": "4.1.1", "scenario_spec": {"faults": [{"kind": "x"}]},
                          "pipelines": {"p": {"guarantee": "exactly-once"}}})
    back = read_plan(plan.write(tmp_path / "config.json"))
    assert back.kafka_version == "4.1.1"
    assert back.scenario_spec == {"faults": [{"kind": "x"}]}
    assert back.pipelines == {"p": {"guarantee": "exactly-once"}}
    assert back.clients() == ["java 4.1.1", "kafka-python"]
    assert back.client_ids() == {"my-app": "user-0"}


def test_a_recorded_run_reads_through_the_one_parser():
    plan = plan_of(RECORDED / "pipeline-restart")
    doc = read_plan_json(RECORDED / "pipeline-restart" / "config.json")
    assert plan is not None and plan.run == doc["run"]
    assert set(plan.producers) == set(doc["producers"]) and plan.pipelines == doc["pipelines"]
    assert plan.kafka_version == doc["kafka_version"]


def test_a_folder_without_a_plan_is_none_and_a_bad_plan_names_its_file(tmp_path):
    assert plan_of(tmp_path) is None
    (tmp_path / "config.json").write_text('{"format": "run-config", "version": 1}')
    assert plan_of(tmp_path) is None
    with pytest.raises(RunFormatError, match="config.json: not a run plan"):
        read_plan(tmp_path / "config.json")
    with pytest.raises(RunFormatError, match="expected format 'run-config'"):
        plan_from_json({"run": "r", "producers": {}}, "x/config.json")


def test_a_recorded_plan_may_lack_the_bootstrap_servers():
    doc = {"format": "run-config", "version": 1, "run": "r",
           "producers": {"p": {"mode": "idempotent", "topic": "t"}}}
    plan = plan_from_json(doc)
    assert plan.bootstrap_servers == "" and plan.producers["p"].expect == "idempotent"
