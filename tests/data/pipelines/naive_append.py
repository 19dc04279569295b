"""A user's own pipeline that claims more than it gives: each micro-batch appended to
Parquet files with ``foreachBatch``, the batch id unused. A batch Spark replays after a
driver crash is appended again, so its records reach the output twice: exactly-once is
what it claims, at-least-once is what it does (tests/integration/pipelines/test_triggers.py).

It knows nothing of the tool's fault injection: the driver wraps the function it hands
to ``foreachBatch`` to hold each batch after its write (streaming.pipelines.hold).
"""

GUARANTEE = "exactly-once"


def build(spark, source):
    path = spark.conf.get("verifier.pipeline.output.path")

    def append(batch, batch_id):
        batch.write.mode("append").parquet(path)

    return (source.select("topic", "partition", "offset", "value").writeStream
            .foreachBatch(append).trigger(processingTime="1 second"))


def read_output(spark):
    return spark.read.parquet(spark.conf.get("verifier.pipeline.output.path"))
