"""The fault kinds the nemesis can run: one registry, one module per family.

Each family module (:mod:`.proxy`, :mod:`.broker`, :mod:`.process`, :mod:`.spark`,
:mod:`.config`, :mod:`.retention`, :mod:`.application`, :mod:`.group`) declares its kinds
(:class:`.base.Kind`): how a spec of it is validated, how it starts and heals, the
triggers it may wait for, the part of the run it needs (what decides which environments
skip it), and its family as the verdict sees it (verifier.judge.faults: the columns it
concerns, how its exposure is counted). The kinds here and the verdict's are the same
list: a kind the judge does not know, or one it knows that nothing here runs, is an error
at import.

Adding a kind to a family is adding it to that family's ``KINDS`` (and its name to the
judge's family); a new family is a module here, one in verifier.judge.faults, and a line
in each registry.
"""

from __future__ import annotations

from verifier.harness.faults.kinds import (
    application,
    broker,
    config,
    group,
    process,
    proxy,
    retention,
    scaling,
    spark,
)
from verifier.harness.faults.kinds.base import (
    PARTS,
    FaultEnv,
    Kind,
    NotApplied,
    ScheduledFault,
    Settling,
)
from verifier.harness.faults.triggers import NAMES as TRIGGER_NAMES
from verifier.judge import faults as judged
from verifier.rundata.errors import UsageError

#: every kind the nemesis can run, by name, in the verdict's order
KINDS: dict[str, Kind] = {k.name: k for m in (proxy, broker, process, spark, config, retention,
                                              application, group, scaling)
                          for k in m.KINDS}
if tuple(KINDS) != judged.KINDS:
    raise ImportError(f"the runnable fault kinds {tuple(KINDS)} are not the judged ones "
                      f"{judged.KINDS} (verifier.judge.faults)")
#: every kind's name, as error messages list them
NAMES: tuple[str, ...] = tuple(KINDS)
#: trigger -> the kinds that take it
TRIGGER_TAKERS: dict[str, tuple[str, ...]] = {
    t: tuple(k.name for k in KINDS.values() if t in k.triggers) for t in TRIGGER_NAMES}


def of_family(family: str) -> tuple[str, ...]:
    """The kinds of a family (verifier.judge.faults): ``spark``, ``proxy``, ..."""
    return tuple(k.name for k in KINDS.values() if k.family.name == family)


def skipped(parts: set[str]) -> set[str]:
    """The kinds an environment offering ``parts`` (of :data:`~.base.PARTS`) cannot run:
    those that need another part."""
    return {k.name for k in KINDS.values() if k.needs is not None and k.needs not in parts}


def check_env(kinds: set[str], env: FaultEnv) -> None:
    """Before anything starts: every fault kind has the part of the run it acts on."""
    for part in PARTS:
        missing = {k for k in kinds if k in KINDS and KINDS[k].needs == part}
        if missing and getattr(env, part) is None:
            raise UsageError(f"fault kinds {sorted(missing)} need a {part}, and this run "
                             "has none")


def not_ready(fault: ScheduledFault, env: FaultEnv) -> str | None:
    """Why ``fault``'s target would not meet it at work now (its start is held back)."""
    check = KINDS[fault.kind].not_ready
    return None if check is None else check(fault, env)


__all__ = ["KINDS", "NAMES", "TRIGGER_TAKERS", "FaultEnv", "Kind", "NotApplied",
           "ScheduledFault", "Settling", "check_env", "not_ready", "of_family", "skipped"]
