"""Spark's real-time mode (Spark 4.1+), as a pipeline under test: your events copied from
a topic to Spark's Kafka sink, stateless, on the real-time trigger; and the same query on
the micro-batch trigger (``:micro_batch``) beside it.

    verifier chaos --spark-version 4.2.0 --scenario pipeline-restart --pipeline examples/pipelines/realtime_events.py,examples/pipelines/realtime_events.py:micro_batch

Real-time mode runs one long-running task per input partition for the whole batch and
commits the offsets at the batch's end, after the records were written: a driver killed
inside a batch restarts from the last commit and writes again everything that batch
wrote (the Kafka sink is at-least-once either way). How much that is grows with the
trigger's duration; the report sets the records written again per kill against it, for
both triggers. Spark's rules for the real-time trigger: update output mode, the Kafka
source, a Kafka or ``foreach`` sink, no Python in the query (4.2), a duration of 5 s or
more, and a task slot for every input partition at once (2 here: the driver runs
``local[2]``).
"""

from pyspark.sql import functions as F

INPUT = {"events": 2}  # one long-running task per partition: 2 slots in local[2]
ID_FIELD = "verifier_id"  # each event carries its identity in this field ...
TRACE_COLUMN = "value"  # ... and the output keeps the whole event
GUARANTEE = "at-least-once"  # Spark documents its Kafka sink so
REAL_TIME = "10 seconds"  # the batch (checkpoint) interval of real-time mode
MICRO_BATCH = "1 second"


def make_record(topic, i):
    """Event i: a user's click or view, always the same for the same i."""
    return {"event": i, "user": f"user-{i % 50:02d}",
            "kind": "click" if i % 3 else "view", "amount_cents": (i * 7919) % 10_000}


def _query(spark, source):
    events = source.select("key", "value")
    return (events.where(F.col("value").isNotNull())
            .writeStream.format("kafka").outputMode("update")
            .option("kafka.bootstrap.servers",
                    spark.conf.get("verifier.pipeline.kafka.bootstrap.servers"))
            .option("topic", spark.conf.get("verifier.pipeline.output.topic")))


def build(spark, source):
    """Real-time mode: batches of REAL_TIME, records written as they come."""
    return _query(spark, source).trigger(realTime=REAL_TIME)


def micro_batch(spark, source):
    """The same query on the micro-batch trigger."""
    return _query(spark, source).trigger(processingTime=MICRO_BATCH)
