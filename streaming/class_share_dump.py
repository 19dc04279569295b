"""The driver that dumps :mod:`streaming.class_share`'s archive: it loads what the
tool's drivers load at their start (a session with the Kafka connector, a few small jobs,
Arrow as the observer reads its batches, a streaming query), then exits, and the JVM
writes the archive as it exits. Run by :func:`streaming.class_share.build` as
``python -m streaming.class_share_dump TARGET``.
"""

from __future__ import annotations

import os
import sys

from streaming.class_share import QUIET
from streaming.session import SPARK_CONF_ENV, spark_session


def dump(target: str) -> int:
    os.environ.pop(SPARK_CONF_ENV, None)  # our settings alone, not a caller's
    spark = spark_session("verifier-class-share", conf={
        "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={target} {QUIET}"})
    df = spark.range(20000).selectExpr("id % 7 AS k", "CAST(id AS STRING) AS v")
    df.groupBy("k").count().collect()
    df.toArrow()  # as the observer reads its batches (streaming/sinks.py)
    spark.createDataFrame([(1, "a")], "k INT, v STRING").collect()
    query = (spark.readStream.format("rate").option("rowsPerSecond", 50).load()
             .writeStream.foreachBatch(lambda batch, _id: batch.count()).start())
    query.processAllAvailable()
    query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(dump(sys.argv[1]))
