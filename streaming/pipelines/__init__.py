"""Pipelines under test (issue 21): the module contract, the presets, the driver process
that runs one under the fault schedule, and the read-back of its output.

``contract`` (what a pipeline module is, checked), ``loader`` (find and load one),
``presets`` (kafka-sink, file, delta,
foreach-batch, foreach-batch-idempotent), ``driver`` (``python -m
streaming.pipelines.driver``), ``readback`` (its output as identity rows).
"""

from streaming.pipelines.contract import GUARANTEES, Pipeline, PipelineError
from streaming.pipelines.loader import load_pipeline

__all__ = ["GUARANTEES", "Pipeline", "PipelineError", "load_pipeline"]
