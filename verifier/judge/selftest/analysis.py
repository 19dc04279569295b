"""The self-test's analysis of one run (or one mutated copy): every anomaly row the checks
find, the verdicts, and the live path replayed against the batch checks.

:func:`analyse` runs the checks of ``verifier analyze`` through Spark, keeping every row;
:mod:`verifier.judge.selftest.scope` makes the same :class:`Analysis` of a copy without
Spark, from the part its mutation touched.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from verifier.judge import verdict as V
from verifier.judge.model import OBSERVER
from verifier.rundata.layout import layout

#: anomalies kept per (check, kind, mode, level): all of them, for a small recorded run
ALL_ROWS = 1_000_000


@dataclass
class Analysis:
    """One analysed run: every anomaly row (with its kind and mode), counts, verdicts."""

    rows: list[dict]
    counts: Counter
    verdicts: dict[str, str]
    columns: dict[str, V.Column]
    crashed: list[str]
    sink: str
    faults: set[str]
    #: the whole live path (the live checks replayed over the Spark observer's rows, then
    #: the follower's remainder after the drain) against the batch checks
    #: (verifier.judge.checks.crosscheck): the rows only one side has, as text
    live_differ: list[str] = field(default_factory=list)
    #: what the live path found, per (kind, isolation)
    live_counts: Counter = field(default_factory=Counter)
    #: ``live_differ`` as rows (crosscheck.compare's ``differ``), for a scope to filter
    live_differ_rows: list[dict] = field(default_factory=list)


def analyse(spark, run_dir: Path) -> Analysis:
    """The checks and verdicts of ``verifier analyze``, keeping every anomaly row."""
    from verifier.judge.checks import Derived, load_run, run_checks

    run = load_run(spark, run_dir)
    d = Derived(run)
    try:
        outcomes = run_checks(run, d, cap=ALL_ROWS)
        live_differ, live_counts = _live_against_batch(run, d, Path(run_dir))
    finally:
        d.release()
    doc = V.build(run, outcomes, {}, cap=1)
    rows, counts = [], Counter()
    for o in outcomes:
        for g in o.groups:
            counts[(g.kind, g.mode, g.isolation)] += g.count
            rows += [{**a, "kind": g.kind, "mode": g.mode, "isolation": g.isolation}
                     for a in g.sample]  # fmt: skip
    return Analysis(rows, counts, {c["name"]: c["verdict"] for c in doc["columns"]},
                    {c.name: c for c in V.columns_of(run)},
                    [o.name for o in outcomes if o.error], run.config.sink,
                    V.fault_kinds(run.nemesis), [differ_text(x) for x in live_differ],
                    live_counts, live_differ)  # fmt: skip


def differ_text(x: dict) -> str:
    """One row of the live path against the batch checks, as text."""
    return (f"{x['side']}: {x['kind']} {x['topic']}-{x['partition']} {x['isolation']} "
            f"pid {x['pid']} seq {x['seq']} offset {x['offset']}")


def _live_against_batch(run, d, run_dir: Path) -> tuple[list[dict], Counter]:
    """The mutation through the whole live path (:func:`live_rows`), compared with the
    batch checks as a run's cross-check compares them
    (``verifier.assess.batch``: every kind the live path decides). Returns the
    rows only one side has and the live rows per (kind, isolation)."""
    from verifier.judge.checks.crosscheck import compare
    from verifier.judge.definitions.stream import anomaly_table

    found, whole = live_rows(run, run_dir)
    got = compare(run, d, anomaly_table(found), cap=ALL_ROWS, full=whole)
    return got["differ"], Counter((r["kind"], r["isolation"]) for r in found)


def live_rows(run, run_dir: Path) -> tuple[list[dict], bool]:
    """Every anomaly the live path finds in a finished run folder, and whether that is
    the whole live path (both observer levels recorded; else the stream checks only).

    A copy has no live state of its own, so the live checks
    (:func:`~verifier.judge.definitions.stream.replay`) run over the Spark observer's rows
    in the order the observer met them; then the remainder a run's follower judges after
    the drain (:func:`live_remainder`: lost / unseen, torn, hanging, inconsistent
    offsets), with the same code. ``run``: its config, combos and drain (a
    :class:`~verifier.judge.model.RunData` or the files of ``read_run_files``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from verifier.judge.definitions.stream import replay

    topics = {pid: p.topic for pid, p in run.config.producers.items()}
    found: list[dict] = []
    states, obs = {}, {}
    for iso in sorted({i for r, i in run.combos if r == OBSERVER}):
        files = sorted(layout(run_dir).observations_of(OBSERVER, iso).glob("[!._]*.parquet"))
        if files:
            t = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
            states[iso], rows = replay(t, run.config.run, iso, topics)
            found += rows
            obs[iso] = t
    if len(states) < 2:  # as a run's follower: the remainder needs both levels
        return found, False
    return found + live_remainder(run, run_dir, states, obs).rows, True


def live_remainder(run, run_dir: Path, states: dict, obs: dict):
    """What a run's follower judges after the drain (lost / unseen, torn, hanging,
    inconsistent offsets), on a finished run folder in one go: every history read as the
    follower tails it, settled on the final ``states``, the observer's rows ``obs`` per
    level through the offset comparison; a
    :class:`~verifier.judge.checks.remainder.Remainder`."""
    import pyarrow as pa

    from verifier.rundata.history import HistoryFollower

    cfg = run.config
    chunks = [t for t in (HistoryFollower(layout(run_dir).history(pid), cfg.run, pid).poll()
                          for pid in cfg.producers) if t is not None]  # fmt: skip
    return remainder_of(run, pa.concat_tables(chunks) if chunks else None, states, obs)


def remainder_of(run, chunk, states: dict, obs: dict):
    """:func:`live_remainder` on histories already read (``chunk``: the operations with a
    ``pid`` column, as a follower returns them)."""
    from verifier.judge.checks.remainder import LiveRemainder
    from verifier.judge.definitions.stream import delivery_order

    cfg = run.config
    rest = LiveRemainder(cfg.run, {pid: p.topic for pid, p in cfg.producers.items()})
    if chunk is not None and chunk.num_rows:
        rest.add_history(chunk)
    rest.settle(states)
    for iso, t in obs.items():
        rest.add_observations(iso, delivery_order(t))
    return rest.finish(states, run.drain)


__all__ = ["ALL_ROWS", "Analysis", "analyse", "differ_text", "live_remainder", "live_rows",
           "remainder_of"]
