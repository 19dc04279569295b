"""Where the task hold sits in a pipeline's plan (streaming.pipelines.hold, issue 34), on
the shared session: nothing runs, the plans are only built (seconds).

A run that kills executors holds inside the stage that writes the output: for the
stateful ``dedup-state`` preset above its ``dropDuplicatesWithinWatermark``, in the tasks
that update the state store and write to Delta. Held in the source frame, as before, the
hold sat in the stage that reads Kafka and writes shuffle files: an executor killed there
took neither state nor output with it.
"""

from __future__ import annotations

import pytest

from streaming.pipelines.contract import CONF_HOLD_MARKER, CONF_HOLD_MS, CONF_HOLD_WHERE, CONF_PATH
from streaming.pipelines.hold import ROW_BY_ROW, build_with_hold
from streaming.pipelines.presets import PRESETS, STATE_STORE_CONF

pytestmark = pytest.mark.integration


@pytest.fixture
def task_hold_conf(spark, tmp_path):
    """The session's hold settings of a run that kills executors, restored afterwards
    (the shared session serves the whole tier)."""
    keys = [CONF_HOLD_MS, CONF_HOLD_MARKER, CONF_HOLD_WHERE, *ROW_BY_ROW, *STATE_STORE_CONF]
    before = {k: spark.conf.get(k, None) for k in keys}
    spark.conf.set(CONF_HOLD_MS, "2000")
    spark.conf.set(CONF_HOLD_MARKER, str(tmp_path / "holding"))
    spark.conf.set(CONF_HOLD_WHERE, "task")
    spark.conf.set(CONF_PATH, str(tmp_path / "output"))
    yield
    for k, v in before.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)
    spark.conf.unset(CONF_PATH)


def source(spark):
    """A Kafka source frame (lazy: nothing connects before a query starts)."""
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
            .option("subscribe", "t").load())


def plan_lines(writer) -> list[str]:
    return writer._df._jdf.queryExecution().logical().toString().splitlines()


def test_the_task_hold_sits_above_the_stateful_dedup(spark, task_hold_conf):
    lines = plan_lines(build_with_hold(spark, PRESETS["dedup-state"].build, source(spark)))
    udf = [i for i, line in enumerate(lines) if "passthrough(" in line]
    dedup = [i for i, line in enumerate(lines) if "Deduplicate" in line]
    assert len(udf) == 1 and dedup, lines
    assert udf[0] < dedup[0], "\n".join(lines)  # top-down: the hold above the dedup


def test_a_stateless_sink_holds_once_in_its_one_stage(spark, task_hold_conf):
    lines = plan_lines(build_with_hold(spark, PRESETS["delta"].build, source(spark)))
    assert sum("passthrough(" in line for line in lines) == 1, lines
