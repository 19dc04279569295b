"""The docker environment: a KRaft cluster of containers from a locally built image.

Needs the optional ``docker`` extra (testcontainers); nothing here is imported unless a
user asks for containers (``--environment docker``, the pytest plugin's option).
"""
