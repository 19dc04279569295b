"""The database a run's pipelines write into (issue 46): PostgreSQL for the
``postgres-*`` presets (streaming.pipelines.jdbc), started for the run
(verifier.harness.postgres) or an existing one (``$VERIFIER_POSTGRES_URL``), and each
such pipeline's table in config.json (``jdbc_url``, ``jdbc_table``).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from verifier.harness.postgres import URL_ENV, LocalPostgres, free_port


def needs_database(pipeline) -> bool:
    from streaming.pipelines.jdbc import PRESETS

    return pipeline.spec in PRESETS


@dataclass
class Database:
    url: str
    local: LocalPostgres | None  # None: an existing server (never started nor stopped)

    def start(self) -> None:
        if self.local is not None:
            self.local.process.start()
            self.local.wait_ready()

    def stop(self) -> None:
        if self.local is not None:
            self.local.stop()


def plan_database(pipelines, log: Path) -> Database | None:
    """The run's database when a pipeline needs one (prepared, not started), with the
    JDBC driver's jars resolved; None otherwise."""
    if not any(needs_database(p) for p in pipelines):
        return None
    from verifier.rundata import jvm

    jvm.resolve(jvm.postgres_jdbc_jars())
    url = os.environ.get(URL_ENV)
    if url:
        return Database(url, None)
    local = LocalPostgres(free_port(), log)
    local.prepare()
    return Database(local.url, local)


def table_name(run_id: str, pipeline: str) -> str:
    """A pipeline's table: the run's prefix (a hash of its id: PostgreSQL names are at
    most 63 bytes) and the pipeline's name, in the characters SQL needs no quotes for."""
    digest = hashlib.sha1(run_id.encode()).hexdigest()[:8]
    return re.sub(r"[^a-z0-9_]", "_", f"v_{digest}_{pipeline}".lower())[:50]


def add_entries(entries: dict, pipelines, database: Database | None, run_id: str) -> None:
    """Each database pipeline's ``jdbc_url`` and ``jdbc_table`` in its plan entry."""
    if database is None:
        return
    for p in pipelines:
        if needs_database(p):
            entries[p.name].update(jdbc_url=database.url,
                                   jdbc_table=table_name(run_id, p.name))


__all__ = ["Database", "add_entries", "needs_database", "plan_database", "table_name"]
