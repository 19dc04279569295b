"""The pipeline module contract: loading by preset, file and module, and the refusal of
a writer whose output drops the value (no Spark: the writer's frame is a stand-in)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from streaming.pipelines.contract import PipelineError, check_writer
from streaming.pipelines.loader import load_pipeline, split_specs
from streaming.pipelines.presets import PRESETS


def writer_of(*columns: str):
    """What check_writer reads of a DataStreamWriter: the frame it writes."""
    return SimpleNamespace(_df=SimpleNamespace(columns=list(columns)))


def test_every_preset_loads_with_the_guarantee_it_claims():
    claims = {name: load_pipeline(name).guarantee for name in PRESETS}
    assert claims == {"kafka-sink": "at-least-once", "file": "exactly-once",
                      "delta": "exactly-once", "foreach-batch": "at-least-once",
                      "foreach-batch-idempotent": "exactly-once",
                      "dedup-state": "exactly-once", "postgres-upsert": "exactly-once",
                      "postgres-append": "at-least-once"}


def test_a_user_file_outside_the_project_loads_with_its_parts(tmp_path):
    f = tmp_path / "my_job.py"
    f.write_text("GUARANTEE = 'exactly-once'\n"
                 "def build(spark, source):\n    return source\n"
                 "def read_output(spark):\n    return None\n")
    p = load_pipeline(str(f))
    assert (p.name, p.guarantee, p.read_output is not None) == ("my-job", "exactly-once", True)
    assert load_pipeline(f"{f}:build", guarantee="at-least-once").guarantee == "at-least-once"
    # another function of the same file is another column (its twin beside it)
    assert load_pipeline(f"{f}:read_output").name == "my-job-read-output"


def test_a_module_function_loads(tmp_path, monkeypatch):
    (tmp_path / "jobs_h21.py").write_text("def make(spark, source):\n    return source\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        p = load_pipeline("jobs_h21:make")
        # a function other than build names its column too: two of one module are two
        assert p.name == "jobs-h21-make" and p.guarantee is None
    finally:
        sys.modules.pop("jobs_h21", None)


@pytest.mark.parametrize("body, says", [
    ("x = 1\n", "no function build"),
    ("GUARANTEE = 'maybe'\ndef build(s, d):\n    return d\n", "is not one of"),
    ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
])
def test_a_broken_module_is_a_usage_error_naming_the_problem(tmp_path, body, says):
    f = tmp_path / "bad.py"
    f.write_text(body)
    with pytest.raises(PipelineError, match=says):
        load_pipeline(str(f))


def test_unknown_names_are_refused():
    with pytest.raises(PipelineError, match="no such file"):
        load_pipeline("/nonexistent/job.py")
    with pytest.raises(PipelineError, match="not a preset"):
        load_pipeline("no such thing")


def test_a_writer_that_drops_the_value_is_refused_naming_what_it_writes():
    p = load_pipeline("file")
    check_writer(p, writer_of("topic", "value"))  # keeps it: accepted
    with pytest.raises(PipelineError, match=r"drops the 'value' column.*\['topic', 'n'\]"):
        check_writer(p, writer_of("topic", "n"))


def test_value_column_names_where_the_value_is(tmp_path):
    f = tmp_path / "renamed.py"
    f.write_text("VALUE_COLUMN = 'payload'\ndef build(s, d):\n    return d\n")
    p = load_pipeline(str(f))
    check_writer(p, writer_of("payload"))
    with pytest.raises(PipelineError):
        check_writer(p, writer_of("value"))


def test_build_must_return_a_writer():
    with pytest.raises(PipelineError, match="must return a DataStreamWriter"):
        check_writer(load_pipeline("file"), object())


def test_split_specs_keeps_order_without_repeats():
    assert split_specs("kafka-sink, delta,kafka-sink") == ["kafka-sink", "delta"]
    with pytest.raises(PipelineError):
        split_specs(" , ")
