"""The fault kinds as the verdict sees them: one registry, one module per family (pure).

Each family (:mod:`.proxy`, :mod:`.broker`, :mod:`.process`, :mod:`.spark`,
:mod:`.config`, :mod:`.retention`, :mod:`.application`, :mod:`.group`) names its kinds, the report
columns a fault of it concerns and how its exposure is counted (:class:`.family.Family`).
The verdict (verifier.judge.verdict), the exposure (verifier.judge.exposure) and the
harness's runnable kinds (verifier.harness.faults.kinds, which must name the same kinds)
all read this one list. A new family is a module here, one line in :data:`FAMILIES`, and its
runnable half in the harness.
"""

from __future__ import annotations

from verifier.judge.faults import (
    application,
    broker,
    config,
    group,
    owners,
    process,
    proxy,
    retention,
    spark,
)
from verifier.judge.faults.facts import ColumnSpec, RunFacts
from verifier.judge.faults.family import Family
from verifier.judge.faults.windows import Window, read_windows
from verifier.rundata.columns import is_app_column


def app_prefixes(run_id: str, mode: str) -> tuple[str, ...]:
    """The client id prefixes of an application's column (``app:<name>``); () else."""
    from verifier.rundata.apps import client_prefixes
    from verifier.rundata.columns import APP_PREFIX

    return client_prefixes(run_id, mode.removeprefix(APP_PREFIX)) if is_app_column(mode) \
        else ()

FAMILIES: tuple[Family, ...] = (proxy.FAMILY, broker.FAMILY, process.FAMILY, spark.FAMILY,
                                config.FAMILY, retention.FAMILY, application.FAMILY,
                                group.FAMILY)
#: every fault kind, in the order error messages list them
KINDS: tuple[str, ...] = tuple(k for f in FAMILIES for k in f.kinds)
_FAMILY_OF = {k: f for f in FAMILIES for k in f.kinds}
assert len(_FAMILY_OF) == len(KINDS), "a fault kind is in two families"


def family_of(kind: str) -> Family | None:
    """The family of ``kind``; None for a kind no family has (a newer tool's history)."""
    return _FAMILY_OF.get(kind)


def concerns(w: Window, col: ColumnSpec, producers_mode: dict[str, str]) -> bool:
    """Whether fault ``w`` can change what ``col`` shows (an unknown kind: no column)."""
    family = family_of(w.fault)
    return family is not None and family.concerns(w, col, producers_mode)


def acted_on(w: Window, col: ColumnSpec, facts: RunFacts) -> tuple[int | None, str]:
    """(count, what it counts) of the column's operations fault ``w`` acted on; count
    None when this run did not record what is needed to count it."""
    if w.start is None:
        return 0, "not applied"
    family = family_of(w.fault)
    if family is None:
        return None, f"no exposure rule for {w.fault}"
    return family.acted_on(w, col, facts)


def instances(w: Window, col: ColumnSpec) -> list[dict] | None:
    """What each instance of an application column's application owned during fault
    ``w`` and the rebalances it saw (:mod:`.owners`); None for other columns and for
    faults recorded without the snapshot."""
    app = application.app_of(col)
    if app is None or w.start is None:
        return None
    return owners.per_instance(w.start_detail, w.heal_detail).get(app)


def on_load_path(kind: str) -> bool:
    """Whether a fault of ``kind`` acts on the producers' path (its load rate counts)."""
    family = family_of(kind)
    return family is not None and family.on_load_path


def column_of(config, mode: str) -> ColumnSpec:
    """The exposure's view of the column of ``mode`` (a producer mode, or a pipeline's
    label) in a run's configuration (verifier.judge.model.RunConfig); its transactional
    ids are the generators' defaults (``<run>.<pid>``)."""
    pids = tuple(sorted(p for p, s in config.producers.items() if s.mode == mode))
    labels = {p.label: name for name, p in config.pipelines.items()}
    tids = tuple(f"{config.run}.{p}" for p in pids
                 if getattr(config.producers[p], "expect", None) == "transactional")
    return ColumnSpec(name=mode, mode=mode, pids=pids, topics=(),
                      pipeline=None if pids else labels.get(mode), transactional_ids=tids,
                      app=mode if is_app_column(mode) else None,
                      client_prefixes=app_prefixes(getattr(config, "run", ""), mode))


def unknown_outcomes(nemesis: list[dict], config, mode: str) -> list[str]:
    """Why the column of ``mode`` is UNKNOWN for its faults: each scheduled fault that
    concerns it whose start's outcome is unknown (``info``: it may or may not have been
    applied), in the history's order. A fault that was not applied (``fail``) or acted
    on none of a column's operations leaves the column NOT EXERCISED instead
    (verifier.judge.verdict.apply_exposure)."""
    unknown = [op for op in nemesis
               if op.get("id") and op.get("type") == "info" and op.get("f") == "start"]
    if not unknown:
        return []
    wins = {w.id: w for w in read_windows(nemesis)}
    col = column_of(config, mode)
    producers_mode = {pid: s.mode for pid, s in config.producers.items()}
    out = []
    for op in unknown:
        if concerns(wins[op["id"]], col, producers_mode):
            out.append(f"fault {op.get('fault')} #{op['id']} may not have been applied: "
                       f"{op.get('error')}")
    return out


__all__ = ["FAMILIES", "KINDS", "Family", "acted_on", "column_of", "concerns", "family_of",
           "instances", "on_load_path", "unknown_outcomes"]
