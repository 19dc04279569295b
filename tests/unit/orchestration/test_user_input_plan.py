"""A run's plan with pipeline files that declare their input (issue 46): the topics, their
producers, each pipeline's topics, the database entries."""

from __future__ import annotations

import pytest

from verifier.orchestration import user_input as UI
from verifier.orchestration.databases import add_entries, needs_database, table_name
from verifier.orchestration.pipeline_plan import plan_entries, plan_pipelines
from verifier.orchestration.scenario import parse_scenario
from verifier.rundata.errors import UsageError
from verifier.rundata.jvm import PROJECT_ROOT

ORDERS = str(PROJECT_ROOT / "examples" / "pipelines" / "orders.py")
APPEND = str(PROJECT_ROOT / "examples" / "pipelines" / "orders_append.py")
WORDS = str(PROJECT_ROOT / "examples" / "pipelines" / "kafka_wordcount.py")


def test_declared_topics_are_written_once_by_a_producer_each():
    planned = plan_pipelines((ORDERS, APPEND, WORDS, "delta"), None)
    declared = UI.declared_topics(planned, "r1")
    assert [(d.topic, d.partitions, d.cluster_topic) for d in declared] == [
        ("orders", 3, "r1.in.orders"), ("lines", 2, "r1.in.lines")]
    producers = UI.input_producers(declared, parse_scenario(
        '[workload]\nmodes = ["at-least-once", "idempotent"]\n', "s"))
    assert [(p.pid, p.mode, p.expect, p.topic, p.client) for p in producers] == [
        ("in-orders-0", "input:orders", "idempotent", "r1.in.orders", "kafka-python"),
        ("in-lines-0", "input:lines", "idempotent", "r1.in.lines", "kafka-python")]
    assert UI.plan_entries(declared)["in-orders-0"] == {"spec": ORDERS, "topic": "orders",
                                                        "partitions": 3}


def test_each_pipeline_reads_its_own_topics_and_the_oracle_is_in_its_entry():
    planned = plan_pipelines((ORDERS, "delta"), None)
    entries = plan_entries(planned, "r1", hold=True, run_topics=["r1.idempotent"])
    orders, delta = entries["orders"], entries["delta"]
    assert orders["topics"] == ["r1.in.orders"]
    assert orders["input_topics"] == {"orders": "r1.in.orders"}
    assert (orders["oracle"], orders["key_columns"]) == ("reference", ["customer"])
    assert orders["hold_where"] == "written"  # the aggregation's write is held
    assert delta["topics"] == ["r1.idempotent"] and "input_topics" not in delta
    assert delta["oracle"] == "identity" and "hold_where" not in delta


def test_two_files_declaring_one_topic_must_make_the_same_records(tmp_path):
    other = tmp_path / "other.py"
    other.write_text("INPUT = {'orders': 3}\nORACLE = 'reference'\nGUARANTEE = 'exactly-once'\n"
                     "def make_record(topic, i):\n    return {'n': i}\n"
                     "def build(spark, source):\n    return None\n")
    with pytest.raises(UsageError, match="make_record"):
        plan_pipelines((ORDERS, str(other)), None)
    other.write_text(other.read_text().replace("'orders': 3", "'orders': 2")
                     .replace("{'n': i}", "{}"))
    with pytest.raises(UsageError, match="partitions"):
        UI.declared_topics(plan_pipelines((ORDERS,), None)
                           + plan_pipelines((str(other),), None), "r1")


def test_database_presets_get_a_table_under_the_runs_prefix():
    planned = plan_pipelines(("postgres-upsert", "delta"), None)
    assert [needs_database(p) for p in planned] == [True, False]
    entries = plan_entries(planned, "r1", hold=False, run_topics=["r1.idempotent"])

    class Db:
        url = "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres"

    add_entries(entries, planned, Db(), "pipeline-restart-20261129T070000Z-s0")
    table = entries["postgres-upsert"]["jdbc_table"]
    assert table == table_name("pipeline-restart-20261129T070000Z-s0", "postgres-upsert")
    assert table.startswith("v_") and table.endswith("_postgres_upsert") and len(table) <= 50
    assert "jdbc_url" not in entries["delta"]


def test_a_run_without_modes_plans_its_input_producers_too():
    """The pytest plugin's and a producer file's runs name no preset mode (modes = []):
    no declared topic gives no producer, and a declared one is written idempotently,
    never an IndexError before the run starts."""
    empty = parse_scenario("[workload]\nmodes = []\n", "s")
    assert UI.input_producers([], empty) == []
    declared = UI.declared_topics(plan_pipelines((ORDERS,), None), "r1")
    assert [p.expect for p in UI.input_producers(declared, empty)] == ["idempotent"]


def test_two_files_declaring_one_topic_must_carry_the_identity_alike(tmp_path):
    """The same records, one with the identity in a field of its value: not one topic."""
    text = ("INPUT = {{'orders': 3}}\nORACLE = 'reference'\nGUARANTEE = 'exactly-once'\n{}"
            "def make_record(topic, i):\n    return {{'n': i}}\n"
            "def build(spark, source):\n    return None\n")
    (tmp_path / "a.py").write_text(text.format(""))
    (tmp_path / "b.py").write_text(text.format("ID_FIELD = 'vid'\n"))
    plan_pipelines((str(tmp_path / "a.py"),), None)  # each alone is fine
    with pytest.raises(UsageError, match="ID_FIELD None.*ID_FIELD 'vid'"):
        plan_pipelines((str(tmp_path / "a.py"), str(tmp_path / "b.py")), None)


def test_the_samples_example_plans_its_identity_field_and_trace_column():
    sampled = str(PROJECT_ROOT / "examples" / "pipelines" / "orders_from_samples.py")
    planned = plan_pipelines((sampled,), None)
    entry = plan_entries(planned, "r1", hold=True, run_topics=[])["orders-from-samples"]
    assert (entry["oracle"], entry["trace_column"], entry["id_field"]) == (
        "identity", "verifier_id", "verifier_id")
    assert UI.plan_entries(UI.declared_topics(planned, "r1"))["in-orders-0"]["spec"] == \
        sampled


def test_the_declared_topics_are_written_by_the_runs_client():
    """Every client writes a pipeline file's records: the input producer runs the run's
    (first) client, at the version it names."""
    declared = UI.declared_topics(plan_pipelines((ORDERS,), None), "r1")
    scenario = parse_scenario('[workload]\nmodes = ["idempotent"]\n', "s")
    for client in ("java", "librdkafka", "java:3.9.1"):
        (p,) = UI.input_producers(declared, scenario, client)
        assert (p.client, p.spec, p.topic) == (client.split(":")[0], client, "r1.in.orders")
    assert UI.input_producers(declared, scenario)[0].client == "kafka-python"
