"""``verifier chaos --spark-version``: the pure parts (no JVM, no install): which versions
are accepted, which Delta and Scala line each gets, the columns and the driver's Python."""

from __future__ import annotations

import pytest

from verifier.harness import spark_envs as S
from verifier.orchestration.pipeline_plan import plan_entries, plan_pipelines
from verifier.orchestration.pipelines import PipelineProcess
from verifier.rundata import jvm
from verifier.rundata.errors import UsageError


def test_each_spark_line_gets_its_delta_and_scala():
    assert S.env_for("3.5.7").delta == "3.3.2"
    assert S.env_for("4.2.0").delta == "4.4.0"
    assert jvm.scala_binary(jvm.spark_kafka_jars("3.5.7")) == "2.12"
    assert jvm.scala_binary(jvm.delta_jars("3.3.2")) == "2.12"
    assert jvm.scala_binary(jvm.spark_kafka_jars("4.2.0")) == "2.13"
    assert jvm.scala_binary(jvm.delta_jars("4.4.0")) == "2.13"
    assert jvm.scala_binary(jvm.broker_jars("4.1.1")) is None


@pytest.mark.parametrize("text, why", [
    ("", "expected versions"),
    ("3.5", "expected a release such as 3.5.7"),
    ("3.4.4", "no Delta Lake release is pinned for Spark 3.4"),
    ("4.3.0", "no Delta Lake release is pinned for Spark 4.3"),
])
def test_a_version_without_a_known_stack_is_refused_before_anything_starts(text, why):
    with pytest.raises(UsageError, match=why):
        S.parse_versions(text)


def test_one_column_per_pipeline_and_version():
    assert S.parse_versions("3.5.7, 4.2.0,3.5.7") == ["3.5.7", "4.2.0"]
    planned = plan_pipelines(("delta",), None, ["3.5.7", "4.2.0"])
    assert [(p.name, p.spark_version) for p in planned] == [
        ("delta@spark-3.5.7", "3.5.7"), ("delta@spark-4.2.0", "4.2.0")]
    entries = plan_entries(planned, "run1", hold=True)
    assert entries["delta@spark-3.5.7"]["spark_version"] == "3.5.7"
    assert entries["delta@spark-3.5.7"]["output_topic"] == "run1.out.delta.spark-3.5.7"
    assert [p.name for p in plan_pipelines(("delta",), None)] == ["delta"]


def test_the_driver_runs_its_version_s_python(tmp_path):
    own = PipelineProcess(tmp_path, "delta@spark-3.5.7", tmp_path / "config.json",
                          {"X": "1"}, "3.5.7")
    assert own.argv[0] == str(S.ENVS_ROOT / "3.5.7" / "bin" / "python")
    assert own.env["PYTHONPATH"].split(":")[0] == str(jvm.PROJECT_ROOT)
    assert own.env["X"] == "1"
    pinned = PipelineProcess(tmp_path, "delta", tmp_path / "config.json", {})
    assert pinned.argv[0] != own.argv[0]


def test_a_user_file_is_checked_in_its_version_s_python():
    """The check before the run builds the pipeline in the PySpark it will run on: a
    real-time trigger (Spark 4.1+) is refused on the project's own 4.0, not on 4.2.0."""
    from verifier.orchestration.pipeline_plan import python_for

    python, env = python_for("4.2.0", {"X": "1"})
    assert python == str(S.ENVS_ROOT / "4.2.0" / "bin" / "python")
    assert env["X"] == "1" and env["PYTHONPATH"].split(":")[0] == str(jvm.PROJECT_ROOT)
    import sys

    assert python_for(None, {"X": "1"}) == (sys.executable, {"X": "1"})


def test_the_environment_installs_the_project_s_other_dependencies():
    reqs = S.runtime_requirements()
    assert not [r for r in reqs if r.startswith(("pyspark", "delta-spark"))]
    assert any(r.startswith("pyarrow") for r in reqs)
    assert any(r.startswith("kafka-python") for r in reqs)
