"""A query that is not deterministic: it keeps a random half of the orders. Two
fault-free runs keep different rows, so the reference oracle cannot judge it (UNKNOWN,
never PASS)."""

from pyspark.sql import functions as F

INPUT = {"orders": 3}
ORACLE = "reference"
GUARANTEE = "exactly-once"


def make_record(topic, i):  # the same records as examples/pipelines/orders.py
    customer = f"customer-{i % 40:02d}"
    return {"key": customer,
            "value": {"order_id": i, "customer": customer,
                      "amount_cents": 100 + (i * 7919) % 90_000, "currency": "EUR"}}


def build(spark, source):
    sampled = source.where(F.rand() < 0.5).select(F.col("value").cast("string"))
    return (sampled.writeStream.format("delta")
            .option("path", spark.conf.get("verifier.pipeline.output.path"))
            .trigger(processingTime="1 second"))
