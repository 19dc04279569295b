"""A WRONG orders job, kept to show what a FAIL looks like: the job of ``orders.py`` with
a plain append instead of its MERGE. Run both side by side:

    verifier chaos --pipeline examples/pipelines/orders.py,examples/pipelines/orders_append.py --scenario pipeline-restart

Each micro-batch appends the changed totals per customer (update output) with its batch
id. A driver killed after the append and before Spark committed the batch replays it on
restart, and the replay appends the same totals again: rows the fault-free run wrote once
are in the table twice. The reference oracle reports them as ``duplicate-delivery``
(extra rows, each with its copies), forbidden because the job claims exactly-once: FAIL,
naming the rows. The final total per customer is still right (the replay computes the
same totals), so a check of the final state alone would miss it; a reader summing the
table's rows would not.
"""

from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

INPUT = {"orders": 3}
ORACLE = "reference"
KEY_COLUMNS = ["customer"]
GUARANTEE = "exactly-once"
ORDER = StructType([
    StructField("order_id", LongType()), StructField("customer", StringType()),
    StructField("amount_cents", LongType()), StructField("currency", StringType()),
])


def make_record(topic, i):  # the same records as orders.py (both may read one topic)
    customer = f"customer-{i % 40:02d}"
    return {"key": customer,
            "value": {"order_id": i, "customer": customer,
                      "amount_cents": 100 + (i * 7919) % 90_000, "currency": "EUR"}}


def build(spark, source):
    path = spark.conf.get("verifier.pipeline.output.path")
    orders = (source.select(F.from_json(F.col("value").cast("string"), ORDER).alias("o"))
              .select("o.*").where(F.col("order_id").isNotNull()))
    totals = orders.groupBy("customer").agg(F.count("order_id").alias("orders"),
                                            F.sum("amount_cents").alias("revenue_cents"))

    def append(batch, batch_id):  # WRONG: not idempotent; the batch id orders the rows
        batch.withColumn("batch", F.lit(batch_id)).write.format("delta").mode("append") \
            .save(path)

    return (totals.writeStream.outputMode("update").foreachBatch(append)
            .trigger(processingTime="1 second"))
