"""The names a run gives what it creates on a cluster: one prefix, never the user's ids.

Every topic, transactional id and group id a run creates starts with the run's prefix,
``<run id>.``, and every run id starts with the tool's mark :data:`MARK`::

    verifier-ack-loss-20261129T150102Z-s1.idempotent          a preset's topic
    verifier-ack-loss-20261129T150102Z-s1.transactional-0     its transactional id
    verifier-ack-loss-20261129T150102Z-s1.orders-tx           the user's id, as a suffix
    verifier-ack-loss-20261129T150102Z-s1.spark-<uuid>-...    the Spark readers' groups

Why: a transactional id is a lease on the cluster. A producer that initialises an id a
live service uses bumps its epoch and fences that service (``ProducerFencedError``), and
the service's own re-initialisation then fences the run's generator in turn. A group id
shared with a live application rebalances it or commits over its offsets. With the
prefix, a run can share a cluster with production services; an operator can grant it
ACLs on one prefix (:data:`MARK`); and ``verifier cleanup`` can tell what a killed run
left (the run id's shape, :func:`run_of`) from anything else, and refuse anything else.

The user's own ids run only with ``--use-my-ids`` (:data:`USE_MY_IDS_RISK` says what it
risks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: every run id starts with it, so everything a run creates on a cluster does too
MARK = "verifier-"

#: a run id: the mark, the scenario, its UTC start, ``-rep<k>of<n>`` under --repeat, the seed
RUN_ID = re.compile(r"^verifier-(?P<scenario>.+?)-(?P<stamp>\d{8}T\d{6}Z)"
                    r"(?:-rep\d+of\d+)?-s-?\d+$")
#: a name a run created: its run id, a dot, then what it is (mode, pid, the user's id)
_RUN_NAME = re.compile(r"^(?P<run>verifier-.+?-\d{8}T\d{6}Z(?:-rep\d+of\d+)?-s-?\d+)\..+$")

#: the settings (kafka-python names and Java names) that name an id on the cluster
ID_KEYS = ("transactional_id", "transactional.id", "group_id", "group.id")

#: what ``--use-my-ids`` risks, said when the flag is given and in the flag's help
USE_MY_IDS_RISK = (
    "the run's producers use your transactional.id (and group ids) as they are: a live "
    "service with the same transactional.id is fenced (ProducerFencedError) each time a "
    "generator starts or restarts, and its re-initialisation fences the run's generator "
    "in turn; a live application with the same group id is rebalanced. Use it only on "
    "a cluster where nothing else uses those ids")


def run_id(scenario: str, stamp: str, seed: int) -> str:
    """The id of one run: :data:`MARK`, the scenario, the UTC start stamp (with its
    ``-rep<k>of<n>`` under ``--repeat``) and the seed."""
    return f"{MARK}{scenario}-{stamp}-s{seed}"


def run_prefix(run: str) -> str:
    """What every name the run creates on a cluster starts with."""
    return f"{run}."


def is_run_id(text: str) -> bool:
    """Whether ``text`` has the shape of a run id of this tool."""
    return RUN_ID.match(text) is not None


def run_of(name: str) -> str | None:
    """The run id a topic, transactional id or group id belongs to, or None for a name
    no run of this tool creates."""
    m = _RUN_NAME.match(name)
    return m.group("run") if m else None


def prefixed(value: str, run: str) -> str:
    """``value`` with the run's prefix (the user's id kept as the suffix); unchanged if it
    has it already."""
    prefix = run_prefix(run)
    return value if value.startswith(prefix) else prefix + value


def own_ids(settings: Mapping[str, Any], run: str, use_mine: bool = False) -> dict[str, Any]:
    """A user's producer settings as the run uses them: every id the cluster keeps
    (:data:`ID_KEYS`, kafka-python or Java names) carries the run's prefix, unless
    ``use_mine`` (``--use-my-ids``)."""
    out = dict(settings)
    if use_mine:
        return out
    for key in ID_KEYS:
        if isinstance(out.get(key), str) and out[key]:
            out[key] = prefixed(out[key], run)
    return out


def id_notes(settings: Mapping[str, Any], use_mine: bool = False) -> list[str]:
    """One line per id of the user's settings saying how the run uses it (the run's
    notes, and what ``chaos`` prints before it starts)."""
    keys = [k for k in ID_KEYS if isinstance(settings.get(k), str) and settings[k]]
    if use_mine:
        return [f"{k.replace('_', '.')} {settings[k]}: used as it is (--use-my-ids): "
                f"{USE_MY_IDS_RISK}" for k in keys]
    return [f"{k.replace('_', '.')} {settings[k]}: runs as <run id>.{settings[k]} (the run's "
            "prefix: a live producer or application with your id is never disturbed; "
            "--use-my-ids uses yours as it is)" for k in keys]


def spark_source_options(run: str) -> dict[str, str]:
    """The Spark Kafka source's ``groupIdPrefix``: its consumers' group ids
    (``<prefix>-<uuid>-<hash>``, the driver's and the executors') carry the run's prefix
    instead of ``spark-kafka-source``."""
    return {"groupIdPrefix": f"{run_prefix(run)}spark"}
