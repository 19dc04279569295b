"""Spark's structured Kafka word count, as a pipeline under test: lines from a topic,
split into words, a running count per word written to Spark's Kafka sink in update mode
(each batch writes the words whose count changed: key = the word, value = its count).

    verifier chaos --pipeline path/to/kafka_wordcount.py --scenario pipeline-restart

The output has no input record per row, so it is judged by the reference oracle: the
last count written for each word (``KEY_COLUMNS = ["key"]``: Kafka keeps a key's records
in order in its partition) must be the fault-free run's; a batch replayed after a kill
writes its updates again, reported as extra rows, which Spark's Kafka sink allows
(at-least-once).
"""

from pyspark.sql import functions as F

INPUT = {"lines": 2}
ORACLE = "reference"
KEY_COLUMNS = ["key"]
GUARANTEE = "at-least-once"  # Spark documents its Kafka sink so
WORDS = 3000


def make_record(topic, i):
    """Line i: eight words of a 3,000-word vocabulary."""
    return " ".join(f"w{(i * 31 + k * 977) % WORDS}" for k in range(8))


def build(spark, source):
    lines = source.select(F.col("value").cast("string").alias("line"))
    words = lines.select(F.explode(F.split("line", " ")).alias("word"))
    counts = words.groupBy("word").count()
    return (counts.select(F.col("word").alias("key"),
                          F.col("count").cast("string").alias("value"))
            .writeStream.format("kafka").outputMode("update")
            .option("kafka.bootstrap.servers",
                    spark.conf.get("verifier.pipeline.kafka.bootstrap.servers"))
            .option("topic", spark.conf.get("verifier.pipeline.output.topic"))
            .trigger(processingTime="1 second"))
