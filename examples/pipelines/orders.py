"""An orders job under test, as a team would write it: its own JSON schema, its own
topic, an aggregation, an upsert by key. Copy this file anywhere and run

    verifier chaos --pipeline path/to/orders.py --scenario pipeline-restart

The tool creates the topic ``orders`` (under the run's prefix), its producers write the
records ``make_record`` returns, and ``build`` gets them as Spark's Kafka source frame
(its ``topic`` column says ``orders``). The scenario kills the driver mid-batch and
restarts it from its checkpoint. After the run the tool runs the same ``build`` twice
more without faults over the same input, from its start, each into a fresh table, and
compares: the final row of each customer (``KEY_COLUMNS``) must be the fault-free run's.
A replayed batch MERGEd again changes nothing; appended again, it would leave extra rows.
"""

from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

INPUT = {"orders": 3}  # the topics the query reads, and their partition counts
ORACLE = "reference"  # compare with the same query run without faults
KEY_COLUMNS = ["customer"]  # the table is upserted by customer: compare its final rows
GUARANTEE = "exactly-once"

#: amounts in cents: a sum of doubles depends on the order of its terms (batches), a sum
#: of integers does not
ORDER = StructType([
    StructField("order_id", LongType()), StructField("customer", StringType()),
    StructField("amount_cents", LongType()), StructField("currency", StringType()),
])
CUSTOMERS = 40


def make_record(topic, i):
    """Order i: the same i always gives the same order (a producer's re-send writes it
    again). The key is the customer, as the team's producer would send it."""
    customer = f"customer-{i % CUSTOMERS:02d}"
    return {"key": customer,
            "value": {"order_id": i, "customer": customer,
                      "amount_cents": 100 + (i * 7919) % 90_000, "currency": "EUR"}}


def totals(source):
    """Orders and revenue per customer, from the JSON the producers wrote."""
    orders = (source.select(F.from_json(F.col("value").cast("string"), ORDER).alias("o"))
              .select("o.*").where(F.col("order_id").isNotNull()))
    return orders.groupBy("customer").agg(F.count("order_id").alias("orders"),
                                          F.sum("amount_cents").alias("revenue_cents"))


def build(spark, source):
    """Upsert each micro-batch's changed totals into a Delta table by customer."""
    from delta.tables import DeltaTable

    path = spark.conf.get("verifier.pipeline.output.path")  # the tool's output folder

    def upsert(batch, batch_id):
        if not DeltaTable.isDeltaTable(batch.sparkSession, path):
            batch.write.format("delta").mode("append").save(path)
            return
        (DeltaTable.forPath(batch.sparkSession, path).alias("t")
         .merge(batch.alias("s"), "t.customer = s.customer")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    return (totals(source).writeStream.outputMode("update").foreachBatch(upsert)
            .trigger(processingTime="1 second"))
