"""Presets that write each micro-batch into PostgreSQL with ``foreachBatch`` (issue 46):
the most common exactly-once pattern in practice, and its naive twin.

==================  ===============================================================
``postgres-upsert`` each batch into a staging table, then ``INSERT ... ON CONFLICT
                    (topic, partition, offset) DO NOTHING`` into the output table in
                    one transaction: a replayed batch's rows are already there, so
                    nothing is written twice (exactly-once)
``postgres-append`` each batch appended (``DataFrameWriter.jdbc``, mode append): a
                    replayed batch is appended again (at-least-once; run with
                    ``--pipeline-guarantee exactly-once``, as many such jobs claim
                    without knowing, it FAILs naming the duplicates)
==================  ===============================================================

Both keep each record's place in the log and its value (the identity oracle), and read
their table back through Spark's JDBC source. The database, its URL and the table the
tool gives each pipeline come through the session (``verifier.pipeline.jdbc.url``,
``verifier.pipeline.jdbc.table``): a local server the run starts
(verifier.harness.postgres) or an existing one; the PostgreSQL JDBC driver is resolved
from Maven Central like the other jars (``.jars/postgres-jdbc-<version>``).
"""

from __future__ import annotations

from types import SimpleNamespace

#: the session's settings for a database sink (set by the pipeline's driver)
CONF_JDBC_URL = "verifier.pipeline.jdbc.url"
CONF_JDBC_TABLE = "verifier.pipeline.jdbc.table"
#: which fault-free reference run (0 or absent: the faulted run), for the table's name
CONF_REFERENCE = "verifier.pipeline.reference"
TRIGGER = "1 second"
COLUMNS = ("topic", "partition", "offset", "value")
#: Spark's JDBC source and sink: the driver named, not found through DriverManager
DRIVER = {"driver": "org.postgresql.Driver"}


def table_of(spark) -> str:
    """The output table: the tool's name for it, one per reference run beside it."""
    table = spark.conf.get(CONF_JDBC_TABLE)
    k = spark.conf.get(CONF_REFERENCE, "0") or "0"
    return table if k == "0" else f"{table}_ref{k}"


def execute(spark, url: str, statements: list[str]) -> None:
    """Run SQL statements in one transaction on the driver, through the JDBC driver the
    session loaded (py4j)."""
    jvm = spark.sparkContext._jvm
    conn = jvm.org.postgresql.Driver().connect(url, jvm.java.util.Properties())
    try:
        conn.setAutoCommit(False)
        stmt = conn.createStatement()
        for sql in statements:
            stmt.execute(sql)
        conn.commit()
    finally:
        conn.close()


def _create(table: str) -> str:
    return (f'CREATE TABLE IF NOT EXISTS "{table}" (topic text NOT NULL, '
            'partition integer NOT NULL, "offset" bigint NOT NULL, value bytea, '
            'batch bigint, PRIMARY KEY (topic, partition, "offset"))')


def _upsert(spark, source):
    url, table = spark.conf.get(CONF_JDBC_URL), table_of(spark)
    execute(spark, url, [_create(table)])

    def write(df, batch_id):
        from pyspark.sql import functions as F

        staging = f"{table}_staging"
        (df.withColumn("batch", F.lit(batch_id)).write.mode("overwrite")
         .option("truncate", "true").jdbc(url, staging, properties=DRIVER))
        execute(df.sparkSession, url, [
            f'INSERT INTO "{table}" SELECT topic, partition, "offset", value, batch '
            f'FROM "{staging}" ON CONFLICT (topic, partition, "offset") DO NOTHING'])

    return source.select(*COLUMNS).writeStream.foreachBatch(write).trigger(
        processingTime=TRIGGER)


def _append(spark, source):
    url, table = spark.conf.get(CONF_JDBC_URL), table_of(spark)

    def write(df, batch_id):
        from pyspark.sql import functions as F

        (df.withColumn("batch", F.lit(batch_id)).write.mode("append")
         .jdbc(url, table, properties=DRIVER))

    return source.select(*COLUMNS).writeStream.foreachBatch(write).trigger(
        processingTime=TRIGGER)


def _read(spark):
    return spark.read.jdbc(spark.conf.get(CONF_JDBC_URL), f'"{table_of(spark)}"',
                           properties=DRIVER)


PRESETS = {
    "postgres-upsert": SimpleNamespace(build=_upsert, GUARANTEE="exactly-once",
                                       read_output=_read),
    "postgres-append": SimpleNamespace(build=_append, GUARANTEE="at-least-once",
                                       read_output=_read),
}

__all__ = ["CONF_JDBC_TABLE", "CONF_JDBC_URL", "PRESETS", "execute", "table_of"]
