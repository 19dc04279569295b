"""Spark side: the session factory and the Structured Streaming observer."""

from streaming.session import connector_jars, spark_session

__all__ = ["connector_jars", "spark_session"]
