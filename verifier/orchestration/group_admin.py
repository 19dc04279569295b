"""What the read-back asks about an application's group with Kafka's own Admin
(``verifier.apps.Main share-offsets|group-type``, on the application's own JVM and
classpath: kafka-python has no share-group API and no group types).

- A share group's position (KIP-932) for the drain and the read-back: the share-partition
  start offset per input partition (every record below it acknowledged or archived), and
  the records its instances got at their last delivery attempt (their state files'
  ``last_attempts``): what a kill then leaves archived, not lost
  (verifier.judge.application; docs/applications.md).
- A consumer group's type as the broker describes it (``classic`` or ``consumer``), so a
  column of ``--group-protocol consumer`` is shown to have run in a KIP-848 group.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time

from verifier.rundata import apps as A
from verifier.rundata.app_groups import SHARE_GROUP

log = logging.getLogger(__name__)

ASK_TIMEOUT = 60.0


def is_share(app) -> bool:
    return getattr(app, "group_type", "") == SHARE_GROUP


def _ask(app, env: dict, query: str) -> dict:
    """``verifier.apps.Main <query>`` on the application's own JVM and classpath (``env``:
    its environment contract, its bootstrap and group): the JSON it prints."""
    argv = list(app.argv)
    main = argv.index(A.JAVA_MAIN)
    proc = subprocess.run([*argv[:main + 1], query], env=env, capture_output=True,
                          text=True, timeout=ASK_TIMEOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{query} of {app.name}: exit {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    return json.loads([x for x in proc.stdout.splitlines() if x.startswith("{")][-1])


def share_offsets(app, env: dict) -> dict[str, int]:
    """The share group's start offset per ``"topic-partition"``."""
    return {k: int(v) for k, v in _ask(app, env, "share-offsets").items()}


def group_type(app, env: dict) -> str:
    """The consumer group's type as the broker describes it: ``classic`` or ``consumer``
    (KIP-848), ``""`` when it has none."""
    return str(_ask(app, env, "group-type").get("type") or "").lower()


#: how long a share group's start offsets may stay put, short of the input's end, with
#: every instance between batches, before the drain stops waiting: the broker advances a
#: share-partition's start offset lazily (measured 2026-11-29: 2, 4 and 9 records short
#: of the end for two minutes after every record had been written and acknowledged)
SETTLE_S = 15.0


class Quiet:
    """Whether a share group has settled: its start offsets unchanged for SETTLE_S while
    no instance says it is in a batch (``at_risk`` > 0)."""

    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self.last: dict | None = None
        self.since = clock()

    def settled(self, short: dict, where: A.AppLayout, instances: int) -> bool:
        now = self.clock()
        if short != self.last or any(int(s.get("at_risk") or 0) > 0
                                     for s in _states(where, instances)):
            self.last, self.since = dict(short), now
            return False
        return now - self.since >= SETTLE_S


def _states(where: A.AppLayout, instances: int) -> list[dict]:
    out = []
    for i in range(instances):
        try:
            out.append(json.loads(where.state_file(i).read_text()))
        except (OSError, ValueError):
            continue
    return out


def last_attempts(where: A.AppLayout, instances: int) -> tuple[list[str], int | None]:
    """Every ``"topic-partition@offset"`` an instance got at its last delivery attempt
    (sorted, once each), and the delivery-count limit the instances said."""
    got: set[str] = set()
    limit = None
    for state in _states(where, instances):
        got.update(state.get("last_attempts") or ())
        limit = state.get("delivery_limit") or limit
    return sorted(got), limit


__all__ = ["SETTLE_S", "Quiet", "group_type", "is_share", "last_attempts", "share_offsets"]
