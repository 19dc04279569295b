"""A family of fault kinds as the verdict sees it, and what the families share (pure).

Each family module of this package (proxy, broker, process, spark, config, retention)
declares one :class:`Family`: its kinds, which report columns a fault of it concerns,
and how many of a column's operations it acted on (its exposure, DESIGN §10). The
harness's kind modules (verifier.harness.faults.kinds) run the same kinds and take their
names from here, so a kind the verdict does not know cannot be scheduled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.windows import Window

#: Produce's API key: a proxy rule on it concerns every producer column
API_PRODUCE = 0
#: the client id prefix of the tool's generators (producers/: verifier.generator.<pid>)
GENERATOR_PREFIX = "verifier.generator."
#: the process names of the pipelines under test (verifier.rundata.pipelines)
PIPELINE_PREFIX = "pipeline/"

#: (window, column, producer id -> its column's mode) -> whether the fault can change
#: what the column shows
Concerns = Callable[[Window, ColumnSpec, dict[str, str]], bool]
#: (window of an applied fault, column, facts) -> (count, what it counts); count None
#: when the run did not record what is needed to count it
ActedOn = Callable[[Window, ColumnSpec, RunFacts], tuple[int | None, str]]


@dataclass(frozen=True)
class Family:
    """Fault kinds that concern the same columns and are counted the same way."""

    name: str
    kinds: tuple[str, ...]
    concerns: Concerns
    acted_on: ActedOn
    #: on the producers' path: a column whose load stalled while the fault was active
    #: (and was not sending at its start) was not tested by it
    on_load_path: bool = False


def process_target(w: Window) -> str | None:
    """The process a fault targets (``{"process": NAME}``), or None."""
    name = (w.target or {}).get("process")
    return name if isinstance(name, str) else None


def pid_of_client(client_id: str, extra: dict[str, str]) -> str | None:
    """The producer a client id belongs to: a user's own id (``extra``), else the
    generators' ``verifier.generator.<pid>``."""
    if client_id in extra:
        return extra[client_id]
    if client_id.startswith(GENERATOR_PREFIX):
        return client_id[len(GENERATOR_PREFIX):]
    return None


def owns(col: ColumnSpec, client_id: str | None, transactional_id: str | None = None,
         extra: dict[str, str] | None = None) -> bool:
    """Whether a request of ``client_id`` carrying ``transactional_id`` is the column's:
    its transactional id is one of the column's (whoever sent it: the coordinator's
    WriteTxnMarkers for its producer too), or its client is one of the column's
    producers (a user-set ``client.id`` of the column, ``extra``'s, or a generator's) or
    an instance of its application (an id that begins with one of its prefixes)."""
    if transactional_id is not None and (transactional_id in col.transactional_ids or
                                         transactional_id.startswith(col.client_prefixes)):
        return True
    if not client_id:
        return False
    return client_id in col.client_ids or client_id.startswith(col.client_prefixes) or \
        pid_of_client(client_id, extra or {}) in col.pids


def client_counts(w: Window, col: ColumnSpec, facts: RunFacts | None) -> tuple[int, int]:
    """(matched, hits) of a proxy rule for the column's clients (heal detail ``clients``,
    else, for a rule removed when its trigger never came, the start detail's rule's)."""
    clients = w.heal_detail.get("clients")
    if clients is None:
        clients = (w.start_detail.get("rule") or {}).get("clients") or {}
    extra = facts.client_pid if facts else {}
    matched = hits = 0
    for client_id, counts in clients.items():
        if owns(col, client_id, None, extra):
            matched += int(counts[0])
            hits += int(counts[1])
    return matched, hits


def producer_columns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    """Every producer column (a pipeline is judged on its own driver's faults)."""
    return is_producer_column(col)


def is_producer_column(col: ColumnSpec) -> bool:
    """A producer mode's column: neither a pipeline's nor an application's."""
    return col.pipeline is None and col.app is None
