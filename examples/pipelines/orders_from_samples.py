"""Orders from a file of samples, each followed from input to output by its identity.

    verifier chaos --pipeline examples/pipelines/orders_from_samples.py --scenario pipeline-restart

The tool creates the topic ``orders``; its producer writes record *i* = sample *i* mod 5
of ``orders.jsonl`` (next to this file), its ``order_id`` made *i* (``VARY``) and its
timestamp moved forward one span of the file per round, with the record's identity in the
``verifier_id`` field of the JSON value (``ID_FIELD``; the ``verifier.id`` header stays).
The job parses its own schema, which reads that field as a string, and appends each
micro-batch to Delta keyed by the batch id (``txnAppId``/``txnVersion``): a replayed
batch's write is a no-op. The identity oracle follows every order through
``verifier_id`` (``TRACE_COLUMN``): lost, duplicated or foreign, per input record.

Run as above on 2026-11-29: PASS, 14,530 orders in and out, both kills mid-batch
(docs/pipelines.md).
"""

from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

INPUT = {"orders": 3}  # the topic the query reads, and its partitions
SAMPLES = "orders.jsonl"  # the records: these samples, varied by the tool
VARY = ["order_id"]  # order_id becomes the record's number i: every order distinct
ID_FIELD = "verifier_id"  # the producer writes each record's identity into this field
TRACE_COLUMN = "verifier_id"  # ... and the output keeps it: the identity oracle
GUARANTEE = "exactly-once"

ORDER = StructType([
    StructField("order_id", LongType()), StructField("customer", StringType()),
    StructField("amount_cents", LongType()), StructField("currency", StringType()),
    StructField("verifier_id", StringType()),  # the identity's JSON text, as a string
])


def build(spark, source):
    """The orders as the team's schema reads them, appended to Delta once per batch."""
    path = spark.conf.get("verifier.pipeline.output.path")  # the tool's output folder

    def write(batch, batch_id):
        (batch.withColumn("batch", F.lit(batch_id))
         .write.format("delta").mode("append")
         .option("txnAppId", "orders-from-samples").option("txnVersion", batch_id)
         .save(path))

    orders = (source.select(F.from_json(F.col("value").cast("string"), ORDER).alias("o"))
              .select("o.*"))
    return orders.writeStream.foreachBatch(write).trigger(processingTime="1 second")
