"""The orders job of examples/pipelines/orders.py with a plain append instead of its
upsert: a replayed batch's totals are appended again (the reference oracle's extra rows;
claimed exactly-once, so a FAIL naming them)."""

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


def make_record(topic, i):  # the same records as examples/pipelines/orders.py
    customer = f"customer-{i % 40:02d}"
    return {"key": customer,
            "value": {"order_id": i, "customer": customer,
                      "amount_cents": 100 + (i * 7919) % 90_000, "currency": "EUR"}}


def build(spark, source):
    path = spark.conf.get("verifier.pipeline.output.path")
    orders = (source.select(F.from_json(F.col("value").cast("string"), ORDER).alias("o"))
              .select("o.*"))
    totals = orders.groupBy("customer").agg(F.count("order_id").alias("orders"),
                                            F.sum("amount_cents").alias("revenue_cents"))

    def append(batch, batch_id):  # the batch id orders the appended updates
        batch.withColumn("batch", F.lit(batch_id)).write.format("delta").mode("append") \
            .save(path)

    return (totals.writeStream.outputMode("update").foreachBatch(append)
            .trigger(processingTime="1 second"))
