"""An example pipeline under test: copy this file anywhere and run

    verifier chaos --pipeline path/to/dedup_to_delta.py --scenario pipeline-restart

The tool calls ``build(spark, source)`` with the run's topics as Spark's Kafka source
frame, adds the checkpoint location to the writer it returns and starts it, in its own
driver process that the scenario kills mid-batch and restarts from the checkpoint. After
the run it reads the output back with ``read_output`` and checks, per input partition,
that every record of the input reached the output exactly once (``GUARANTEE``).

The output keeps each input record's ``value``: that is how the tool follows records
from input to output. A pipeline that drops it is refused before the run starts.
"""

from pyspark.sql import functions as F

GUARANTEE = "exactly-once"  # or "at-least-once"; --pipeline-guarantee overrides it


def build(spark, source):
    """Parse the payload, keep the value, write each micro-batch into a Delta table
    idempotently: a batch Spark replays after a crash carries the same batch id, and
    Delta skips a (txnAppId, txnVersion) it has already committed."""
    path = spark.conf.get("verifier.pipeline.output.path")  # the tool's output folder

    def write(batch, batch_id):
        (batch.withColumn("batch", F.lit(batch_id))
         .write.format("delta").mode("append")
         .option("txnAppId", "dedup-to-delta").option("txnVersion", batch_id)
         .save(path))

    enriched = source.select(
        "topic", "partition", "offset", "value",
        F.get_json_object(F.col("value").cast("string"), "$.pid").alias("producer"),
    )
    return enriched.writeStream.foreachBatch(write).trigger(processingTime="1 second")


def read_output(spark):
    """The rows the pipeline wrote, with their value column (and batch, as evidence)."""
    return spark.read.format("delta").load(spark.conf.get("verifier.pipeline.output.path"))
