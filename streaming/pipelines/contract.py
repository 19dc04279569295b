"""The contract of a pipeline under test: what its module holds, and the checks of it.

A pipeline is a Python module (a file anywhere, or an importable module) with::

    def build(spark, source):          # required
        '''source: the run's topics as Spark's Kafka source frame (key, value, topic,
        partition, offset, timestamp, ...); return the configured DataStreamWriter
        (sink, options, trigger). The tool adds the checkpoint location and starts it.'''
    GUARANTEE = "exactly-once"         # optional: or "at-least-once" (--pipeline-guarantee)
    def read_output(spark): ...        # optional: the written rows, with a value column,
                                       # for sinks the tool cannot read back by itself

The output must keep each input record's ``value`` (or the column named by the module's
``VALUE_COLUMN``): identities are followed through it. Where the tool should put its
output, the session says (so the run folder holds it and the tool can read it back):

    spark.conf.get("verifier.pipeline.output.path")    # a folder for a file or Delta sink
    spark.conf.get("verifier.pipeline.output.topic")   # a topic for Spark's Kafka sink
    spark.conf.get("verifier.pipeline.kafka.bootstrap.servers")

Named by ``--pipeline``: a preset name (streaming.pipelines.presets), ``path/to/file.py``
(function ``build``), ``path/to/file.py:function`` or ``package.module:function``, and
loaded by :mod:`streaming.pipelines.loader`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verifier.rundata.errors import UsageError
from verifier.rundata.pipeline_file import FileContract

#: what a pipeline may claim (its expectation-table row)
GUARANTEES = ("exactly-once", "at-least-once")

#: the Spark settings through which the tool tells a pipeline where to write
CONF_PATH = "verifier.pipeline.output.path"
CONF_TOPIC = "verifier.pipeline.output.topic"
CONF_BOOTSTRAP = "verifier.pipeline.kafka.bootstrap.servers"
#: fault injection (scenarios that kill the driver mid-batch): how long a batch holds
#: after part of it is written, and the file that says a batch is holding now
CONF_HOLD_MS = "verifier.pipeline.hold_ms"
CONF_HOLD_MARKER = "verifier.pipeline.hold_marker"
#: where the batch holds: "source" (the first row of Spark partition 0's task, once the
#: batch's other tasks have written: a driver kill) or "task" (partway through partition
#: 0's task, rows of it written: an executor kill; streaming.pipelines.hold)
CONF_HOLD_WHERE = "verifier.pipeline.hold_where"
#: record headers a Kafka sink may write, read back as evidence (readback): the batch and
#: the task attempt (``<stage>.<partition>.<attempt>``) that wrote the record
HEADER_BATCH, HEADER_TASK = "verifier.batch", "verifier.task"

class PipelineError(UsageError):
    """A pipeline that breaks its contract (unloadable, no build, value dropped)."""


@dataclass(frozen=True)
class Pipeline:
    """A loaded pipeline: its column name, how it was named, and the module's parts."""

    name: str  # the report column: a preset's name or the file's stem
    spec: str  # what --pipeline said
    build: Callable[[Any, Any], Any]
    guarantee: str | None  # None: the module claims nothing (then --pipeline-guarantee)
    read_output: Callable[[Any], Any] | None = None
    value_column: str = "value"  # the identity oracle's trace column
    #: the file's INPUT, make_record and oracle names (verifier.rundata.pipeline_file)
    file: FileContract = field(default_factory=lambda: FileContract({}))


def output_columns(writer) -> list[str]:
    """The columns of the frame a ``DataStreamWriter`` writes (its plan's output)."""
    df = getattr(writer, "_df", None)
    if df is None:
        raise PipelineError("build() must return a DataStreamWriter (df.writeStream...), "
                            f"not {type(writer).__name__}")
    return list(df.columns)


def check_writer(pipeline: Pipeline, writer) -> None:
    """Refuse, before the query starts, a writer whose output drops the value column.

    A ``foreachBatch`` writer is checked on the frame it is handed; what the function
    writes is checked when its output is read back (``read_output``). A pipeline judged
    by the reference oracle keeps no identity: nothing to check."""
    columns = output_columns(writer)
    if pipeline.file.oracle == "reference":
        return
    if pipeline.value_column not in columns:
        raise PipelineError(
            f"pipeline {pipeline.spec}: its output drops the {pipeline.value_column!r} "
            f"column (it writes {columns}); each input record's value must reach the "
            "output (or set VALUE_COLUMN to the column that holds it), or the tool cannot "
            "follow identities from input to output")


__all__ = ["CONF_BOOTSTRAP", "CONF_HOLD_MARKER", "CONF_HOLD_MS", "CONF_HOLD_WHERE",
           "CONF_PATH", "CONF_TOPIC", "GUARANTEES", "HEADER_BATCH", "HEADER_TASK",
           "Pipeline", "PipelineError", "check_writer", "output_columns"]
